package architecture

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// objectKeys are log keys that name a Kubernetes object by a lower-case word. Structured logs
// name an object the way Cluster API requires: the key is its Kind, the value klog.KObj(obj) or
// klog.KRef(namespace, name), so a log line can be joined with the object's other lines.
var objectKeys = map[string]bool{
	"secret": true, "configmap": true, "role": true, "object": true, "workload": true, "kind": true,
	"name": true, "namespace": true, "deployment": true, "statefulset": true, "service": true,
	"ingress": true, "ca": true, "app": true, "tenant": true, "controlplane": true,
	"kustomization": true, "gitrepository": true, "pod": true,
}

// TestLogsNameObjectsWithKObj checks every log call of the operator's own code (controllers,
// internal, main.go; not tests): an object is logged under its Kind with klog.KObj or klog.KRef,
// never as a lower-case key with a plain name, and no kind is spelled with the Go type (%T).
func TestLogsNameObjectsWithKObj(t *testing.T) {
	root := filepath.Join("..", "..")
	var files []string
	for _, dir := range []string{"controllers", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, filepath.Join(root, "main.go"))
	calls := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		problems, n := logProblems(t, path, src)
		calls += n
		for _, p := range problems {
			t.Error(p)
		}
	}
	if calls < 50 {
		t.Fatalf("found only %d log calls; the check is not looking at the operator's logs", calls)
	}
}

// TestLogProblemsAreFound feeds the check each shape it rejects and the ones it accepts.
func TestLogProblemsAreFound(t *testing.T) {
	src := []byte(`package x

func f() {
	log.Info("Created CA", "secret", name)
	log.Info("Applying", "kind", fmt.Sprintf("%T", obj), "name", key.Name)
	ctrl.LoggerFrom(ctx).V(1).Info("Deleted", "Secret", name)
	log.Error(err, "Listing failed", "object", client.ObjectKeyFromObject(obj))
	log.Info("Fine", "Secret", klog.KRef(ns, name), "attempt", 3)
	log.Info("Fine too", scheme.KindOf(obj), klog.KObj(obj), "error", err.Error())
	other.Info("not a logger", "secret", name)
}
`)
	got, calls := logProblems(t, "x.go", src)
	if calls != 6 {
		t.Errorf("counted %d log calls, want 6", calls)
	}
	for _, want := range []string{`"secret"`, `%T`, `"kind"`, `"Secret" is not`, `"object"`} {
		found := false
		for _, p := range got {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("the check did not report %s; it reported %q", want, got)
		}
	}
	for _, p := range got {
		if strings.Contains(p, "Fine") || strings.Contains(p, ":10:") {
			t.Errorf("reported an accepted call: %s", p)
		}
	}
}

// logProblems lists the log calls of one file that break the rule, and counts the log calls.
func logProblems(t *testing.T, name string, src []byte) ([]string, int) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	var problems []string
	calls := 0
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Info" && sel.Sel.Name != "Error") || !isLogger(fset, sel.X) {
			return true
		}
		calls++
		kv := call.Args
		if sel.Sel.Name == "Error" && len(kv) > 0 {
			kv = kv[1:]
		}
		if len(kv) > 0 {
			kv = kv[1:] // the message
		}
		at := fset.Position(call.Pos())
		for i := 0; i+1 < len(kv); i += 2 {
			key, value := kv[i], kv[i+1]
			if spellsGoType(value) || spellsGoType(key) {
				problems = append(problems, fmt.Sprintf("%s: a kind spelled with %%T: use scheme.KindOf", at))
			}
			lit, isLit := key.(*ast.BasicLit)
			if !isLit {
				// A kind computed at run time (scheme.KindOf): the value must be a klog reference.
				if !isKlogRef(value) {
					problems = append(problems, fmt.Sprintf("%s: a computed key names an object: its value must be klog.KObj or klog.KRef", at))
				}
				continue
			}
			k, _ := strconv.Unquote(lit.Value)
			switch {
			case objectKeys[strings.ToLower(k)] && (k == "" || k[0] < 'A' || k[0] > 'Z'):
				problems = append(problems, fmt.Sprintf("%s: key %q names an object: log it under its Kind with klog.KObj or klog.KRef", at, k))
			case k != "" && k[0] >= 'A' && k[0] <= 'Z' && !isKlogRef(value):
				problems = append(problems, fmt.Sprintf("%s: key %q is not a klog.KObj or klog.KRef", at, k))
			}
		}
		return true
	})
	return problems, calls
}

// isLogger reports whether x reads as a logr.Logger: log, logger, ctrl.Log..., ctrl.LoggerFrom(ctx)
// and their V(n) and WithName/WithValues forms.
func isLogger(fset *token.FileSet, x ast.Expr) bool {
	var b bytes.Buffer
	if err := printer.Fprint(&b, fset, x); err != nil {
		return false
	}
	s := b.String()
	return s == "log" || s == "logger" || strings.HasPrefix(s, "log.") || strings.HasPrefix(s, "logger.") ||
		strings.Contains(s, "LoggerFrom(") || strings.HasPrefix(s, "ctrl.Log")
}

// isKlogRef reports whether e is a call of klog.KObj, klog.KRef or klog.KObjSlice.
func isKlogRef(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "klog" && strings.HasPrefix(sel.Sel.Name, "K")
}

// spellsGoType reports whether e formats a value with %T.
func spellsGoType(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.Contains(lit.Value, "%T") {
			found = true
		}
		return !found
	})
	return found
}
