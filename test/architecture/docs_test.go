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
	for _, path := range goFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if bytes.Contains(line, []byte(sectionSign)) {
				t.Errorf("%s:%d cites a section number; link to docs/ instead: %s", path, i+1, bytes.TrimSpace(line))
			}
		}
	}
}

// goFiles lists the Go files of the module (tests included), as paths relative to this package.
func goFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d fs.DirEntry, err error) error {
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
		if strings.HasSuffix(path, ".go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found only %d Go files; is the module root right?", len(files))
	}
	return files
}
