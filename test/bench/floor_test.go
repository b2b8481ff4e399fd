package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// floorFiles are n app folders of three files each, as P4 pushes them.
func floorFiles(n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		dir := fmt.Sprintf("apps/ns/app-%03d", i)
		files[dir+"/kustomization.yaml"] = fmt.Sprintf("resources:\n- deployment.yaml\n# %d\n", i)
		files[dir+"/deployment.yaml"] = fmt.Sprintf("kind: Deployment\nmetadata:\n  name: app-%03d\n", i)
		files[dir+"/.kubeopera-owner"] = fmt.Sprintf("owner: %d\n", i)
	}
	files["apps/a.yaml"] = "a\n" // a file beside folders, and names that sort differently as folders
	files["apps/ns.yaml"] = "b\n"
	files["top"] = "c\n"
	return files
}

// worktreeCommit commits files through a worktree on disk, with one AddWithOptions{All: true}
// (perFile: one Worktree.Add per file), and returns the tree hash.
func worktreeCommit(t testing.TB, files map[string]string, perFile bool) string {
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if perFile {
			if _, err := wt.Add(name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !perFile {
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
	}
	sig := &object.Signature{Name: "bench", Email: "bench@example.com", When: time.Unix(0, 0)}
	hash, err := wt.Commit("raw push", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(hash)
	if err != nil {
		t.Fatal(err)
	}
	return c.TreeHash.String()
}

// The floor's directly built tree is the tree Git itself builds from the same files: the floor
// pushes exactly what a worktree commit would.
func TestBuildTreeIsTheWorktreeTree(t *testing.T) {
	files := floorFiles(5)
	r, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := buildTree(r.Storer, files)
	if err != nil {
		t.Fatal(err)
	}
	if want := worktreeCommit(t, files, false); got.String() != want {
		t.Fatalf("built tree %s, the worktree commit's tree is %s", got, want)
	}
}

// BenchmarkFloorCommit compares ways of committing 200 app folders (600 files) with go-git,
// without the push: go test -run '^$' -bench FloorCommit ./test/bench
func BenchmarkFloorCommit(b *testing.B) {
	files := floorFiles(200)
	b.Run("objects", func(b *testing.B) {
		for b.Loop() {
			r, err := git.Init(memory.NewStorage(), nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := buildTree(r.Storer, files); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("add-all", func(b *testing.B) {
		for b.Loop() {
			worktreeCommit(b, files, false)
		}
	})
	b.Run("add-per-file", func(b *testing.B) {
		for b.Loop() {
			worktreeCommit(b, files, true)
		}
	})
}
