package architecture

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	// The ControlPlane package is compiled before this test runs, with the flags of this test
	// binary, so the export data typeCheck asks the go command for is already in the build cache
	// and a cold run does not compile the package's dependencies a second time.
	_ "github.com/kubeopera/kubeopera-operator/controllers/controlplane"
)

// The ControlPlane reconciler talks to the ioFog Controller through one package,
// controllers/controlplane/internal/conversation, and keeps the Kubernetes side to itself
// (docs/architecture.md, "The Controller conversation"). These checks fail when the old shape
// comes back: Controller calls in the reconcile package, a Kubernetes client in the conversation,
// or a pass scope that carries the reconciler, a live session or callbacks instead of data.

const (
	controlPlanePkg  = module + "/controllers/controlplane"
	conversationPkg  = module + "/controllers/controlplane/internal/conversation"
	controllerClient = module + "/internal/iofog"
)

// exclusive lists, for a package that only one package may import in its own files, that
// package and the import paths (prefixes) others may not use.
var exclusive = []struct {
	owner     string
	forbidden []string
	from      []string
	why       string
}{
	{
		owner:     conversationPkg,
		forbidden: []string{controllerClient},
		from:      []string{controlPlanePkg},
		why:       "the ControlPlane reconciler asks the Controller through its conversation package only",
	},
}

// conversationForbidden are the Kubernetes clients the conversation package may not import: it
// never reads or writes a Kubernetes object (its logger comes from the context).
var conversationForbidden = []string{
	"sigs.k8s.io/controller-runtime/pkg/client",
	"k8s.io/client-go",
}

// forbiddenImports lists the imports of pkg (its own files) under any of forbidden.
func forbiddenImports(own map[string][]string, pkg string, forbidden []string) ([]string, error) {
	deps, ok := own[pkg]
	if !ok {
		// A moved or renamed package must take its rule along, not silently drop it.
		return nil, fmt.Errorf("package %s does not exist", pkg)
	}
	var bad []string
	for _, d := range deps {
		for _, f := range forbidden {
			if under(d, f) {
				bad = append(bad, d)
			}
		}
	}
	return bad, nil
}

func TestOnlyTheConversationCallsTheController(t *testing.T) {
	own := ownImports(t)
	for _, e := range exclusive {
		if _, ok := own[e.owner]; !ok {
			t.Errorf("package %s does not exist", e.owner)
		}
		for _, pkg := range e.from {
			bad, err := forbiddenImports(own, pkg, e.forbidden)
			if err != nil {
				t.Error(err)
			}
			for _, d := range bad {
				t.Errorf("%s imports %s in its own files: %s", pkg, d, e.why)
			}
		}
	}
}

func TestConversationReadsNoKubernetesObjects(t *testing.T) {
	bad, err := forbiddenImports(ownImports(t), conversationPkg, conversationForbidden)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range bad {
		t.Errorf("%s imports %s: the conversation never reads or writes Kubernetes objects; the reconciler gives it what it needs", conversationPkg, d)
	}
}

func TestForbiddenImportsFindsEachProblem(t *testing.T) {
	own := map[string][]string{
		controlPlanePkg: {"context", controllerClient, controllerClient + "/fake"},
		conversationPkg: {"sigs.k8s.io/controller-runtime", "sigs.k8s.io/controller-runtime/pkg/client", "k8s.io/client-go/tools/events"},
	}
	bad, err := forbiddenImports(own, controlPlanePkg, []string{controllerClient})
	if err != nil || len(bad) != 2 {
		t.Errorf("the Controller client imports of %s: got %q, %v; want both iofog packages", controlPlanePkg, bad, err)
	}
	bad, err = forbiddenImports(own, conversationPkg, conversationForbidden)
	if err != nil || len(bad) != 2 {
		t.Errorf("the Kubernetes clients of %s: got %q, %v; want pkg/client and client-go, not the logger's root package", conversationPkg, bad, err)
	}
	if _, err := forbiddenImports(own, module+"/gone", nil); err == nil {
		t.Error("a package that does not exist passed the check")
	}
}

// TestScopeIsData checks that the pass scope of the ControlPlane reconciler is data: no field
// that points back to the Reconciler, and no interface, func or chan (a live session, a cache of
// callbacks), in the field itself or as the element of a pointer, slice, array or map. Structs
// of the package that a field holds are data too, except that they may keep an error they
// observed (a session struct with a client in it is not). What a pass needs besides data is
// passed to the functions that need it.
func TestScopeIsData(t *testing.T) {
	pkg := typeCheck(t, filepath.Join("..", "..", "controllers", "controlplane"), controlPlanePkg)
	problems, err := dataStructProblems(pkg, "scope", "Reconciler")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("controllers/controlplane: %s", p)
	}
}

func TestScopeIsDataFindsEachProblem(t *testing.T) {
	src := `package x

type Reconciler struct{}

type session interface{ Close() }

type observed struct{ err error }

type liveSession struct {
	client  session
	err     error
}

type scope struct {
	r        *Reconciler
	session  session
	caChecks map[string]error
	onDone   func()
	done     chan struct{}
	closers  []func()
	now      int64
	observed observed
	names    map[string]bool
	live     *liveSession
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := (&types.Config{}).Check("x", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dataStructProblems(pkg, "scope", "Reconciler")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"field r", "field session", "field caChecks", "field onDone", "field done", "field closers", "field live.client"} {
		found := false
		for _, p := range got {
			found = found || strings.Contains(p, want+" ")
		}
		if !found {
			t.Errorf("the check did not report %q; it reported %q", want, got)
		}
	}
	if len(got) != 7 {
		t.Errorf("got %d problems, want 7 (now, observed, names and the error of live are data): %q", len(got), got)
	}
	if _, err := dataStructProblems(pkg, "gone", "Reconciler"); err == nil {
		t.Error("a struct that does not exist passed the check")
	}
}

// dataStructProblems lists the fields of struct typeName in pkg that are not data: a pointer to
// the type owner, an interface, a func or a chan, also as the element of a pointer, slice, array
// or map.
func dataStructProblems(pkg *types.Package, typeName, owner string) ([]string, error) {
	obj := pkg.Scope().Lookup(typeName)
	if obj == nil {
		return nil, fmt.Errorf("type %s not found in %s", typeName, pkg.Path())
	}
	st, ok := obj.Type().Underlying().(*types.Struct)
	if !ok {
		return nil, fmt.Errorf("type %s of %s is not a struct", typeName, pkg.Path())
	}
	var problems []string
	var walk func(st *types.Struct, prefix string, nested bool)
	seen := map[*types.Struct]bool{}
	walk = func(st *types.Struct, prefix string, nested bool) {
		seen[st] = true
		for i := range st.NumFields() {
			f := st.Field(i)
			if nested && types.Identical(f.Type(), types.Universe.Lookup("error").Type()) {
				continue
			}
			if why := notData(f.Type(), owner); why != "" {
				problems = append(problems, fmt.Sprintf("field %s%s (%s) of %s is %s", prefix, f.Name(), f.Type(), typeName, why))
				continue
			}
			if inner := ownStruct(f.Type(), pkg); inner != nil && !seen[inner] {
				walk(inner, prefix+f.Name()+".", true)
			}
		}
	}
	walk(st, "", false)
	return problems, nil
}

// ownStruct is the struct of pkg that t is or holds (through a pointer, slice, array or map
// value), or nil.
func ownStruct(t types.Type, pkg *types.Package) *types.Struct {
	for {
		switch u := t.(type) {
		case *types.Pointer:
			t = u.Elem()
			continue
		case *types.Slice:
			t = u.Elem()
			continue
		case *types.Array:
			t = u.Elem()
			continue
		case *types.Map:
			t = u.Elem()
			continue
		case *types.Named:
			if st, ok := u.Underlying().(*types.Struct); ok && u.Obj().Pkg() == pkg {
				return st
			}
		}
		return nil
	}
}

func notData(t types.Type, owner string) string {
	if p, ok := t.(*types.Pointer); ok {
		if n, ok := p.Elem().(*types.Named); ok && n.Obj().Name() == owner {
			return "a pointer to the " + owner
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Interface:
		return "an interface"
	case *types.Signature:
		return "a func"
	case *types.Chan:
		return "a chan"
	case *types.Pointer:
		return notData(u.Elem(), owner)
	case *types.Slice:
		return notData(u.Elem(), owner)
	case *types.Array:
		return notData(u.Elem(), owner)
	case *types.Map:
		if why := notData(u.Key(), owner); why != "" {
			return why
		}
		return notData(u.Elem(), owner)
	}
	return ""
}

// typeCheck type-checks the non-test files of the package in dir (import path path) against the
// export data of its dependencies, as the go command builds them.
func typeCheck(t *testing.T, dir, path string) *types.Package {
	t.Helper()
	exports := exportData(t, dir)
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var parsed []*ast.File
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
	}
	if len(parsed) == 0 {
		t.Fatalf("no Go files in %s: the check checked nothing", dir)
	}
	lookup := func(importPath string) (io.ReadCloser, error) {
		file, ok := exports[importPath]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", importPath)
		}
		return os.Open(file)
	}
	pkg, err := (&types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}).Check(path, fset, parsed, nil)
	if err != nil {
		t.Fatalf("type-check %s: %v", path, err)
	}
	return pkg
}

// exportData maps every dependency of the package in dir to its export data file.
func exportData(t *testing.T, dir string) map[string]string {
	t.Helper()
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}"}
	if raceBuild {
		// The same flag as this test binary's build, so the go command finds the export data
		// of that build in its cache instead of compiling every dependency again without it.
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(context.Background(), "go", append(args, ".")...)
	cmd.Dir = dir
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list -export: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), " "); ok && file != "" {
			exports[path] = file
		}
	}
	return exports
}
