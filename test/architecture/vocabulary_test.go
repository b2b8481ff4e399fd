package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reconcilers are the packages whose passes end in internal/outcome's vocabulary (relative to
// the module root).
var reconcilers = []string{"controllers/controlplane", "controllers/app"}

// TestOnePassGrammar checks that the reconcilers end a pass one way: a step returns an error of
// internal/outcome (Retry, Wait, Stop, Pending) and outcome.Result turns it into what Reconcile
// returns. It fails on a second vocabulary coming back: a call of reconcile.TerminalError in a
// reconciler, an alias of an outcome type, a function that only forwards to outcome, or a type
// of its own that carries a requeue delay beside the errors.
func TestOnePassGrammar(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, dir := range reconcilers {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rel, _ := filepath.Rel(root, path)
			for _, p := range grammarProblems(t, rel, src) {
				t.Error(p)
			}
			checked++
		}
		if checked == 0 {
			t.Fatalf("no Go files in %s: the check checked nothing", dir)
		}
	}
}

// TestOnePassGrammarFindsEachProblem feeds the check one file with each shape it rejects, so
// that a check that finds nothing cannot pass unnoticed.
func TestOnePassGrammarFindsEachProblem(t *testing.T) {
	src := []byte(`package x

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

type stepError = outcome.Error

type result struct {
	requeueAfter time.Duration
	reason       string
}

func retry(reason string, err error) error { return outcome.Retry(reason, err) }

func end(err error) error { return reconcile.TerminalError(err) }

func wait(component string) error {
	return outcome.Wait("WorkloadUnavailable", time.Second, component+" is rolling out.")
}

func fine(err error) error {
	if err == nil {
		return nil
	}
	return outcome.Retry("R", err)
}
`)
	got := grammarProblems(t, "x.go", src)
	for _, want := range []string{"alias stepError", "type result", "func retry", "reconcile.TerminalError"} {
		found := false
		for _, p := range got {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("the check did not report %q; it reported %q", want, got)
		}
	}
	if len(got) != 4 {
		t.Errorf("got %d problems, want 4 (funcs wait and fine are fine): %q", len(got), got)
	}
}

// grammarProblems lists what in one file breaks the one pass grammar.
func grammarProblems(t *testing.T, name string, src []byte) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	outcomeName, reconcileName := "", ""
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		local := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		switch path {
		case module + "/internal/outcome":
			outcomeName = local
		case "sigs.k8s.io/controller-runtime/pkg/reconcile":
			reconcileName = local
		}
	}
	var problems []string
	report := func(pos token.Pos, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s", fset.Position(pos), fmt.Sprintf(format, args...)))
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.TypeSpec:
			if n.Assign.IsValid() && refersTo(n.Type, outcomeName) {
				report(n.Pos(), "alias %s of an internal/outcome type: use the type itself", n.Name.Name)
			}
			if st, ok := n.Type.(*ast.StructType); ok && carriesRequeue(st) {
				report(n.Pos(), "type %s carries a requeue delay: a wait is an outcome.Wait", n.Name.Name)
			}
		case *ast.FuncDecl:
			if forwardsTo(n, outcomeName) {
				report(n.Pos(), "func %s only forwards to internal/outcome: call it directly", n.Name.Name)
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && reconcileName != "" && id.Name == reconcileName && n.Sel.Name == "TerminalError" {
				report(n.Pos(), "reconcile.TerminalError in a reconciler: return outcome.Stop, outcome.Result decides")
			}
		}
		return true
	})
	return problems
}

// refersTo reports whether expr names something of package pkg.
func refersTo(expr ast.Expr, pkg string) bool {
	if pkg == "" {
		return false
	}
	found := false
	ast.Inspect(expr, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == pkg {
				found = true
			}
		}
		return !found
	})
	return found
}

// carriesRequeue reports whether a struct has a time.Duration field named for a requeue.
func carriesRequeue(st *ast.StructType) bool {
	for _, field := range st.Fields.List {
		sel, ok := field.Type.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Duration" {
			continue
		}
		for _, name := range field.Names {
			if strings.Contains(strings.ToLower(name.Name), "requeue") {
				return true
			}
		}
	}
	return false
}

// forwardsTo reports whether fn's body is one return of one call into package pkg that passes
// plain identifiers only (its own parameters): a second name for the vocabulary. A function that
// builds a message or a cause (rollingOut, deleteFailed) is not a forward.
func forwardsTo(fn *ast.FuncDecl, pkg string) bool {
	if pkg == "" || fn.Body == nil || len(fn.Body.List) != 1 {
		return false
	}
	ret, ok := fn.Body.List[0].(*ast.ReturnStmt)
	if !ok || len(ret.Results) != 1 {
		return false
	}
	call, ok := ret.Results[0].(*ast.CallExpr)
	if !ok {
		return false
	}
	// outcome.X(...) or outcome.X(...).On(...)
	for {
		for _, arg := range call.Args {
			if _, ok := arg.(*ast.Ident); !ok {
				return false
			}
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		if id, ok := sel.X.(*ast.Ident); ok {
			return id.Name == pkg
		}
		inner, ok := sel.X.(*ast.CallExpr)
		if !ok {
			return false
		}
		call = inner
	}
}
