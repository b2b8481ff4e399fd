package gitops

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/util"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
)

// checkout is a go-git repository with a worktree on disk: the reference treeEdit is compared
// with (what `git add -A` and a commit of the same edits give).
type checkout struct {
	t    *testing.T
	repo *git.Repository
	wt   *git.Worktree
}

func newCheckout(t *testing.T, files map[string]string) *checkout {
	t.Helper()
	repo, err := git.PlainInit(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	c := &checkout{t: t, repo: repo, wt: wt}
	for p, content := range files {
		c.write(p, content)
	}
	if len(files) > 0 {
		c.commit()
	}
	return c
}

func (c *checkout) write(p, content string) {
	c.t.Helper()
	if err := c.wt.Filesystem.MkdirAll(path.Dir(p), 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := util.WriteFile(c.wt.Filesystem, p, []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// commit stages everything (git add -A) and commits; it returns the commit's tree.
func (c *checkout) commit() plumbing.Hash {
	c.t.Helper()
	if err := c.wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		c.t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com"}
	h, err := c.wt.Commit("x", &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		c.t.Fatal(err)
	}
	commit, err := c.repo.CommitObject(h)
	if err != nil {
		c.t.Fatal(err)
	}
	return commit.TreeHash
}

func (c *checkout) tree() *object.Tree {
	c.t.Helper()
	head, err := c.repo.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	commit, err := c.repo.CommitObject(head.Hash())
	if err != nil {
		c.t.Fatal(err)
	}
	tree, err := commit.Tree()
	if err != nil {
		c.t.Fatal(err)
	}
	return tree
}

// applyToWorktree is the change done with files: the folder replaced by exactly its files,
// removed, or (c.only) its listed files and marker removed and the folders left empty with them.
func applyToWorktree(fsys billy.Filesystem, c Change) error {
	if c.Delete && c.only != nil {
		for _, name := range append([]string{OwnerFile}, c.only...) {
			p := path.Join(c.Path, name)
			if fi, err := fsys.Lstat(p); err != nil || fi.IsDir() {
				continue
			}
			if err := fsys.Remove(p); err != nil {
				return err
			}
		}
		return nil
	}
	if err := util.RemoveAll(fsys, c.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for name, content := range c.Files {
		p := path.Join(c.Path, name)
		if err := fsys.MkdirAll(path.Dir(p), 0o755); err != nil {
			return err
		}
		if err := util.WriteFile(fsys, p, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func TestTreeEditGivesTheTreeOfAddAll(t *testing.T) {
	base := map[string]string{
		"README.md":                    "hello",
		"apps/t1/web/deployment.yaml":  "web",
		"apps/t1/web/service.yaml":     "svc",
		"apps/t1/web/" + OwnerFile:     "owner",
		"apps/t1/api/deployment.yaml":  "api",
		"apps/t1/api/extra/notes.txt":  "someone's",
		"apps/t1/api/" + OwnerFile:     "owner",
		"apps/t2/db/deployment.yaml":   "db",
		"apps/t2/db/" + OwnerFile:      "owner",
		"apps/t1-other/x/a.yaml":       "sorting: t1-other sorts before t1/ in Git",
		"apps/t1.x":                    "a file named like the folder",
		"clusters/prod/kustomize.yaml": "flux",
	}
	files := func(kv ...string) map[string][]byte {
		out := map[string][]byte{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = []byte(kv[i+1])
		}
		return out
	}
	for name, changes := range map[string][]Change{
		"a new folder":                  {{Path: "apps/t3/new", Files: files("deployment.yaml", "n", OwnerFile, "o")}},
		"a folder replaced by fewer":    {{Path: "apps/t1/web", Files: files("deployment.yaml", "web2", OwnerFile, "o")}},
		"files in subfolders":           {{Path: "apps/t1/web", Files: files("a/b/c.yaml", "deep", "d.yaml", "d", OwnerFile, "o")}},
		"the same content":              {{Path: "apps/t1/web", Files: files("deployment.yaml", "web", "service.yaml", "svc", OwnerFile, "owner")}},
		"a folder removed":              {{Path: "apps/t2/db", Delete: true}},
		"a removal that empties a tree": {{Path: "apps/t2/db", Delete: true}, {Path: "apps/t1-other/x", Delete: true}},
		"only the listed files removed": {{Path: "apps/t1/api", Delete: true, only: []string{"deployment.yaml", "extra"}}},
		"every listed file removed":     {{Path: "apps/t1/web", Delete: true, only: []string{"deployment.yaml", "service.yaml", "gone.yaml"}}},
		"listed names outside skipped":  {{Path: "apps/t1/web", Delete: true, only: []string{"../api/deployment.yaml", "service.yaml"}}},
		"a missing folder removed":      {{Path: "apps/none/x", Delete: true}, {Path: "apps/none/y", Delete: true, only: []string{"a"}}},
		"several changes, one tree":     {{Path: "apps/t1/web", Delete: true}, {Path: "apps/t3/a", Files: files("x", "1", OwnerFile, "o")}, {Path: "apps/t1/api/sub", Files: files("y", "2")}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ref := newCheckout(t, base)
			baseTree := ref.tree()
			edit := newTreeEdit(ref.repo.Storer, baseTree)
			for _, c := range changes {
				g.Expect(edit.writable(c.Path)).To(Succeed())
				g.Expect(edit.apply(c)).To(Succeed())
				// A marker's list is repository content: a name leaving the folder is skipped.
				refChange := c
				if c.only != nil {
					refChange.only = nil
					for _, n := range c.only {
						if !strings.HasPrefix(n, "../") {
							refChange.only = append(refChange.only, n)
						}
					}
				}
				g.Expect(applyToWorktree(ref.wt.Filesystem, refChange)).To(Succeed())
			}
			got, err := edit.write()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(ref.commit()), "the edited tree is the tree of git add -A")
			tree, err := object.GetTree(ref.repo.Storer, got)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tree.Files().ForEach(func(f *object.File) error {
				g.Expect(f.Mode).To(Equal(filemode.Regular), f.Name)
				return nil
			})).To(Succeed())
		})
	}
}

func TestTreeEditStartsFromNothing(t *testing.T) {
	g := NewWithT(t)
	ref := newCheckout(t, nil)
	edit := newTreeEdit(ref.repo.Storer, nil)
	c := Change{Path: "apps/t/web", Files: map[string][]byte{"a.yaml": []byte("a"), OwnerFile: []byte("o")}}
	g.Expect(edit.apply(c)).To(Succeed())
	g.Expect(applyToWorktree(ref.wt.Filesystem, c)).To(Succeed())
	got, err := edit.write()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(ref.commit()))
}

func TestTreeEditRefusesPathsThroughLinksFilesAndSubmodules(t *testing.T) {
	g := NewWithT(t)
	storer := memory.NewStorage()
	blob := func(content string) plumbing.Hash {
		h, err := newTreeEdit(storer, nil).blob([]byte(content))
		g.Expect(err).NotTo(HaveOccurred())
		return h
	}
	sub := &object.Tree{Entries: []object.TreeEntry{{Name: "x.yaml", Mode: filemode.Regular, Hash: blob("x")}}}
	obj := storer.NewEncodedObject()
	g.Expect(sub.Encode(obj)).To(Succeed())
	subHash, err := storer.SetEncodedObject(obj)
	g.Expect(err).NotTo(HaveOccurred())
	obj = storer.NewEncodedObject()
	g.Expect((&object.Tree{Entries: []object.TreeEntry{
		{Name: "file", Mode: filemode.Regular, Hash: blob("f")},
		{Name: "link", Mode: filemode.Symlink, Hash: blob("/etc")},
		{Name: "ok", Mode: filemode.Dir, Hash: subHash},
		{Name: "vendor", Mode: filemode.Submodule, Hash: plumbing.NewHash("0123456789012345678901234567890123456789")},
	}}).Encode(obj)).To(Succeed())
	baseHash, err := storer.SetEncodedObject(obj)
	g.Expect(err).NotTo(HaveOccurred())
	base, err := object.GetTree(storer, baseHash)
	g.Expect(err).NotTo(HaveOccurred())
	edit := newTreeEdit(storer, base)
	for p, want := range map[string]string{
		"link":          "symbolic link",
		"link/app":      "symbolic link",
		"file/app":      "is a file",
		"vendor/app":    "is a submodule",
		"ok/x.yaml/app": "is a file",
	} {
		err := edit.writable(p)
		g.Expect(err).To(MatchError(ErrInvalidPath), p)
		g.Expect(err.Error()).To(ContainSubstring(want), p)
	}
	for _, p := range []string{"ok/app", "new/app", "ok"} {
		g.Expect(edit.writable(p)).To(Succeed(), p)
	}
	// The checks edit nothing: the tree written is the base, and no tree object is stored.
	trees := func() int {
		n := 0
		iter, err := storer.IterEncodedObjects(plumbing.TreeObject)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(iter.ForEach(func(plumbing.EncodedObject) error { n++; return nil })).To(Succeed())
		return n
	}
	before := trees()
	g.Expect(edit.write()).To(Equal(baseHash))
	g.Expect(trees()).To(Equal(before))
}

// A clone has no worktree: after changes are written, removed and written again, the cache holds
// Git's own files (.git) and no file of the branch.
func TestClonesHoldNoFileOfTheBranch(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	apply(t, w, repo, appChange("web", map[string]string{"deployment.yaml": "a", "sub/x.yaml": "b"}))
	apply(t, w, repo, appChange("api", map[string]string{"deployment.yaml": "c"}))
	del := appChange("web", nil)
	del.Files, del.Delete = nil, true
	apply(t, w, repo, del)
	apply(t, w, repo, appChange("api", map[string]string{"deployment.yaml": "d"}))

	g.Expect(readRemote(t, repo, nil).files(t)).To(HaveKeyWithValue("apps/ns/api/deployment.yaml", "d"))
	var outside []string
	g.Expect(filepath.WalkDir(w.cacheDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(w.cacheDir, p)
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) >= 2 && parts[1] == git.GitDirName {
			return fs.SkipDir
		}
		if !d.IsDir() {
			outside = append(outside, rel)
		}
		return nil
	})).To(Succeed())
	g.Expect(outside).To(BeEmpty(), "files of the branch in the clone cache")
}
