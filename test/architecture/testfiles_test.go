package architecture

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWhiteBoxTestFilesSayWhatTheyAre checks the one naming rule of test files: in a package
// that has black-box tests (package x_test), a white-box test file (package x, which sees the
// unexported names) ends in _internal_test.go, and a file that only exports names to the
// black-box tests is export_test.go or *_export_test.go. A package with white-box tests only
// names its files freely.
func TestWhiteBoxTestFilesSayWhatTheyAre(t *testing.T) {
	dirs := map[string][]string{}
	for _, path := range goFiles(t) {
		if strings.HasSuffix(path, "_test.go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
		}
	}
	mixed := 0
	for dir, files := range dirs {
		var white []string
		black := false
		for _, f := range files {
			if strings.HasSuffix(packageClause(t, f), "_test") {
				black = true
			} else {
				white = append(white, f)
			}
		}
		if !black || len(white) == 0 {
			continue
		}
		mixed++
		for _, f := range white {
			base := filepath.Base(f)
			if strings.HasSuffix(base, "_internal_test.go") || base == "export_test.go" || strings.HasSuffix(base, "_export_test.go") {
				continue
			}
			t.Errorf("%s: a white-box test beside black-box tests (%s): name it *_internal_test.go", f, dir)
		}
	}
	if mixed == 0 {
		t.Fatal("no package mixes white-box and black-box tests: the check checked nothing")
	}
}

// packageClause returns the name in the package clause of a Go file.
func packageClause(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if name, ok := strings.CutPrefix(s.Text(), "package "); ok {
			return strings.TrimSpace(name)
		}
	}
	t.Fatalf("%s has no package clause", path)
	return ""
}
