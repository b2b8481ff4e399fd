package architecture

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// privateHistory matches what only the project's own tracker or its first design notes explain:
// an issue or a stop by number, the name of those notes, and a choice named by who made it (the
// first person plural possessive) rather than why. A comment or a document says what the code
// does and why, to a reader who never saw them. A random seed (chaos trials, fuzzing's seed
// corpus, an nkey seed) is not private history.
var privateHistory = regexp.MustCompile(`(?i)\b(issue\s+#?\d+|stop\s+\d+|ours|(the\s+)?seed's|the\s+seed)\b`)

// notHistory are words that, right before or after "seed", make it a random or key seed.
var notHistory = []string{"random ", "nkey ", "chaos ", " corpus"}

// historyCitations returns the citations of private history in text.
func historyCitations(text string) []string {
	var out []string
	for _, loc := range privateHistory.FindAllStringIndex(text, -1) {
		match := text[loc[0]:loc[1]]
		before := strings.ToLower(text[max(0, loc[0]-8):loc[0]])
		after := strings.ToLower(text[loc[1]:min(len(text), loc[1]+8)])
		if strings.Contains(strings.ToLower(match), "seed") && randomSeed(strings.ToLower(match), before, after) {
			continue
		}
		out = append(out, match)
	}
	return out
}

// randomSeed reports whether a match of "seed" is a random or key seed by the words around it.
func randomSeed(match, before, after string) bool {
	for _, w := range notHistory {
		if strings.HasSuffix(before, w) || strings.HasPrefix(after, w) || strings.Contains(match, strings.TrimSpace(w)) {
			return true
		}
	}
	return false
}

// TestCommentsCiteNoPrivateHistory fails for every Go comment of the module (tests included)
// and every document (README, CHANGELOG, docs/) that cites private history.
func TestCommentsCiteNoPrivateHistory(t *testing.T) {
	for _, path := range goFiles(t) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		for _, group := range f.Comments {
			for _, c := range group.List {
				for _, cite := range historyCitations(c.Text) {
					t.Errorf("%s cites private history (%q); say what and why instead", fset.Position(c.Pos()), cite)
				}
			}
		}
	}
	root := filepath.Join("..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "CHANGELOG.md"))
	if len(docs) < 5 {
		t.Fatalf("found only %d documents; is the module root right?", len(docs))
	}
	for _, path := range docs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, cite := range historyCitations(line) {
				t.Errorf("%s:%d cites private history (%q); say what and why instead", path, i+1, cite)
			}
		}
	}
}

// TestHistoryCitationsAreFound checks the matcher on the shapes it must find and the ones it must
// leave alone.
func TestHistoryCitationsAreFound(t *testing.T) {
	for _, text := range []string{
		"Issue 24 item 1: the push credential", "(issue 27: host API requests", "see issue #3",
		"CI of stop 35", "the seed's delays", "keeps the seed's cadence", "(docs/x.md#y, ours)", "Ours but damaged",
	} {
		if len(historyCitations(text)) == 0 {
			t.Errorf("%q: no citation found", text)
		}
	}
	for _, text := range []string{
		"chosen by the random seed", "the random seed's control", "run of the seed corpus",
		"returns the nkey seed text", "this operator's choice", "a courses list", "issues are open", "the stop took 60 s",
	} {
		if got := historyCitations(text); len(got) != 0 {
			t.Errorf("%q: found %q, which is not private history", text, got)
		}
	}
}
