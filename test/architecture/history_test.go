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
var privateHistory = regexp.MustCompile(`(?i)\b(issue\s+#?\d+|stop\s+\d+|ou[r]s|(the\s+)?seed\x27s|the\s+seed)\b`)

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
// leave alone. The samples join their words with "_", so that this file does not itself hold what
// it rejects (apostrophes are escaped and one word is split for the same reason); spaced reads
// them with spaces.
func TestHistoryCitationsAreFound(t *testing.T) {
	spaced := func(s string) string { return strings.ReplaceAll(s, "_", " ") }
	for _, text := range []string{
		"Issue_24_item 1: the push credential", "(issue_27: host API requests", "see_issue_#3",
		"CI_of_stop_35", "the_seed\u0027s_delays", "keeps_the_seed\u0027s cadence", "(docs/x.md#y,_our" + "s)", "Our" + "s_but damaged",
	} {
		if len(historyCitations(spaced(text))) == 0 {
			t.Errorf("%q: no citation found", spaced(text))
		}
	}
	for _, text := range []string{
		"chosen_by_the_random_seed", "the_random_seed\u0027s_control", "run_of_the_seed_corpus",
		"returns_the_nkey_seed_text", "this operator's choice", "a courses list", "issues are open", "the stop took 60 s",
	} {
		if got := historyCitations(spaced(text)); len(got) != 0 {
			t.Errorf("%q: found %q, which is not private history", spaced(text), got)
		}
	}
}
