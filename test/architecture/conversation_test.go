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
// callbacks), in the field itself or as the element of a pointer, slice, array or map. What a
// pass needs besides data is passed to the functions that need it.
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
	for _, want := range []string{"field r", "field session", "field caChecks", "field onDone", "field done", "field closers"} {
		found := false
		for _, p := range got {
			found = found || strings.Contains(p, want+" ")
		}
		if !found {
			t.Errorf("the check did not report %q; it reported %q", want, got)
		}
	}
	if len(got) != 6 {
		t.Errorf("got %d problems, want 6 (now, observed and names are data): %q", len(got), got)
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
	for i := range st.NumFields() {
		f := st.Field(i)
		if why := notData(f.Type(), owner); why != "" {
			problems = append(problems, fmt.Sprintf("field %s (%s) of %s is %s", f.Name(), f.Type(), typeName, why))
		}
	}
	return problems, nil
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
		return os.Open(file) //nolint:gosec // A path the go command printed.
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
	cmd := exec.CommandContext(context.Background(), "go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", ".")
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
