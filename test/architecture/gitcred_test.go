package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gitCredentialPackage holds the one table of the keys of a Git credentials Secret: the Git writer
// reads the push credentials by them and the renderer copies the read-only ones for Flux under
// them, so both must use the same keys.
const gitCredentialPackage = "internal/gitcred"

// distinctGitCredentialKeys are the keys of that table that mean nothing else in the module.
// username, password, token and ca.crt are left out: they are common words (ca.crt is also the CA
// key of TLS Secrets).
var distinctGitCredentialKeys = []string{"identity", "known_hosts", "bearerToken"}

// TestGitCredentialKeysHaveOneTable fails for a string literal of a Git credential key in the
// module's own (non-test) files outside the gitcred package: such a literal starts a second
// table of the keys. Tests may spell the keys out: they check the format against Flux's.
func TestGitCredentialKeysHaveOneTable(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range distinctGitCredentialKeys {
		keys[k] = true
	}
	inTable := map[string]bool{}
	dir := filepath.Join("..", "..", filepath.FromSlash(gitCredentialPackage))
	for _, path := range goFiles(t) {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		own := filepath.Dir(path) == dir
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil || !keys[v] {
				return true
			}
			if own {
				inTable[v] = true
			} else {
				t.Errorf("%s: the Git credential key %q is spelled out; use the constant of %s", fset.Position(lit.Pos()), v, gitCredentialPackage)
			}
			return true
		})
	}
	// A key the table no longer holds would make its check pass without looking at anything.
	for _, k := range distinctGitCredentialKeys {
		if !inTable[k] {
			t.Errorf("%s does not declare the key %q: update distinctGitCredentialKeys", gitCredentialPackage, k)
		}
	}
}
