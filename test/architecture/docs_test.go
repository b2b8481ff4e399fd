package architecture

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sectionSign (U+00A7) is how the old, out-of-tree specification was cited: "spec", the sign and
// a section number. The design lives in docs/ and the code links there
// (docs/controlplane.md#controller-reconcile-steps); a section number of a document the
// repository does not hold says nothing to the next reader.
const sectionSign = "\u00a7"

// TestNoSectionCitations fails for every Go file of the module that cites a section number.
func TestNoSectionCitations(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "vendor", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(line, []byte(sectionSign)) {
				t.Errorf("%s:%d cites a section number; link to docs/ instead: %s", path, i+1, bytes.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d Go files; is the module root right?", checked)
	}
}
