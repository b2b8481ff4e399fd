// Package architecture checks the import rules that keep the layout readable: dependencies point
// from main and hack to controllers, from controllers to internal, never back.
package architecture

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/kubeopera/kubeopera-operator"

// rule forbids packages under from to import packages under to (prefixes of import paths).
type rule struct {
	from, to string
	why      string
}

var rules = []rule{
	{from: module + "/internal/", to: module + "/controllers", why: "internal packages are libraries of the reconcilers, never their callers"},
	{from: module + "/api/", to: module + "/controllers", why: "API types depend on nothing of the implementation"},
	{from: module + "/api/", to: module + "/internal/", why: "API types depend on nothing of the implementation"},
	{from: module + "/controllers/app", to: module + "/controllers/controlplane", why: "the two reconcilers are independent"},
	{from: module + "/controllers/controlplane", to: module + "/controllers/app", why: "the two reconcilers are independent"},
}

// pure lists the packages whose own (non-test) files build objects and must do no I/O: they
// import no context, no HTTP, no controller-runtime and no client-go client, so a builder cannot
// reach the API server or the ioFog Controller. Their tests may import anything.
var pure = []rule{
	{from: module + "/controllers/controlplane/internal/resources", why: "the ControlPlane's builders are pure: the reconcile package does the I/O"},
}

// fixtures are the packages of shared test inputs: imported by tests only, never by a package's
// own files (except the test programs and libraries under testPrograms), and nothing of them
// reaches the operator's binary.
var fixtures = []string{
	module + "/internal/testfixture",
}

// testPrograms holds the test harnesses (test/bench, test/testenv, ...) whose own files may use
// the fixtures: they are test code that no part of the operator imports.
const testPrograms = module + "/test"

// pureForbidden are the import paths (and everything under them) a pure package may not import.
var pureForbidden = []string{
	"context",
	"net/http",
	"sigs.k8s.io/controller-runtime",
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/rest",
	"k8s.io/client-go/tools",
	"k8s.io/client-go/dynamic",
}

// imports lists, for every package of the module (tests included), its imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	return goList(t, "-test", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}}")
}

// ownImports lists, for every package of the module, the imports of its non-test files.
func ownImports(t *testing.T) map[string][]string {
	t.Helper()
	return goList(t, "", "{{.ImportPath}} {{join .Imports \" \"}}")
}

func goList(t *testing.T, flag, format string) map[string][]string {
	t.Helper()
	args := []string{"list"}
	if flag != "" {
		args = append(args, flag)
	}
	args = append(args, "-f", format, module+"/...")
	cmd := exec.CommandContext(context.Background(), "go", args...)
	cmd.Dir = "../.."
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	got := map[string][]string{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		// "pkg [pkg.test]" variants name the same package compiled for its tests.
		name := fields[0]
		rest := fields[1:]
		if len(rest) > 0 && strings.HasPrefix(rest[0], "[") {
			rest = rest[1:]
		}
		got[name] = append(got[name], rest...)
	}
	if len(got) < 10 {
		t.Fatalf("go list found only %d packages; is the module root right?", len(got))
	}
	return got
}

// under reports whether the package path is prefix itself or a package below it.
func under(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func TestImportRules(t *testing.T) {
	for pkg, deps := range imports(t) {
		for _, r := range rules {
			if !under(pkg, r.from) {
				continue
			}
			for _, d := range deps {
				if under(d, r.to) {
					t.Errorf("%s imports %s: %s", pkg, d, r.why)
				}
			}
		}
	}
}

func TestPurePackagesDoNoIO(t *testing.T) {
	all := ownImports(t)
	for _, r := range pure {
		deps, ok := all[r.from]
		if !ok {
			// A moved or renamed package must take its rule along, not silently drop it.
			t.Errorf("pure package %s does not exist", r.from)
			continue
		}
		if len(deps) == 0 {
			t.Errorf("pure package %s imports nothing: the listing is wrong", r.from)
		}
		for _, d := range deps {
			for _, f := range pureForbidden {
				if under(d, f) {
					t.Errorf("%s imports %s: %s", r.from, d, r.why)
				}
			}
		}
	}
}

func TestFixturesOnlyInTests(t *testing.T) {
	own, all := ownImports(t), imports(t)
	for _, f := range fixtures {
		if _, ok := own[f]; !ok {
			// A moved or renamed fixture must take its entry along.
			t.Errorf("fixture package %s does not exist", f)
		}
		usedByTests := false
		for pkg, deps := range all {
			for _, d := range deps {
				usedByTests = usedByTests || (d == f && pkg != f)
			}
		}
		if !usedByTests {
			t.Errorf("no test imports fixture package %s: the check would pass vacuously", f)
		}
		for pkg, deps := range own {
			if under(pkg, testPrograms) {
				continue
			}
			for _, d := range deps {
				if d == f {
					t.Errorf("%s imports the test fixture %s in its own (non-test) files", pkg, f)
				}
			}
		}
	}
	// The binary is the root package: none of its dependencies is a fixture (nor a test program
	// that could bring one in).
	deps := binaryDeps(t)
	for _, f := range fixtures {
		if deps[f] {
			t.Errorf("the operator's binary depends on the test fixture %s", f)
		}
	}
	for d := range deps {
		if under(d, testPrograms) {
			t.Errorf("the operator's binary depends on the test package %s", d)
		}
	}
}

// binaryDeps lists the packages the operator's binary (the module's root package) is built from.
func binaryDeps(t *testing.T) map[string]bool {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), "go", "list", "-deps", "-f", "{{.ImportPath}}", module)
	cmd.Dir = "../.."
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(out.String()) {
		deps[p] = true
	}
	if !deps[module+"/controllers"] {
		t.Fatalf("go list -deps %s does not list %s/controllers: the listing is wrong", module, module)
	}
	return deps
}

// The prefix match must not confuse siblings (controllersx is not under controllers).
func TestUnderMatchesPrefixes(t *testing.T) {
	cases := []struct {
		path, prefix string
		want         bool
	}{
		{module + "/internal/gitops", module + "/internal/", true},
		{module + "/controllers", module + "/controllers", true},
		{module + "/controllers/app", module + "/controllers", true},
		{module + "/controllersx", module + "/controllers", false},
		{module + "/internal", module + "/internal/", true},
		{module + "/api/kubeopera/v1alpha1", module + "/internal/", false},
		{"context", "context", true},
		{"sigs.k8s.io/controller-runtime/pkg/client", "sigs.k8s.io/controller-runtime", true},
		{"k8s.io/client-go/kubernetes/scheme", "k8s.io/client-go/kubernetes", true},
		{"k8s.io/client-go/applyconfigurations/core/v1", "k8s.io/client-go/kubernetes", false},
	}
	for _, c := range cases {
		if got := under(c.path, c.prefix); got != c.want {
			t.Errorf("under(%q, %q) = %v, want %v", c.path, c.prefix, got, c.want)
		}
	}
}
