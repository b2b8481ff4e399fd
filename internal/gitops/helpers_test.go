package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

const testBranch = "main"

// TestMain silences the test Git server, which logs every request.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

var testTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return testTime }

// newServer starts a loopback Git smart-HTTP server that creates
// repositories on first use.
func newServer(t testing.TB, configure ...func(*gittestserver.GitServer)) *gittestserver.GitServer {
	t.Helper()
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatalf("new git server: %v", err)
	}
	srv.AutoCreate()
	for _, c := range configure {
		c(srv)
	}
	if err := srv.StartHTTP(); err != nil {
		t.Fatalf("start git server: %v", err)
	}
	t.Cleanup(func() {
		srv.StopHTTP()
		_ = os.RemoveAll(srv.Root())
	})
	return srv
}

func testRepo(srv *gittestserver.GitServer) Repo {
	return Repo{URL: srv.HTTPAddress() + "/org/apps.git", Branch: testBranch}
}

func newTestWriter(t testing.TB, opts ...Option) *Writer {
	t.Helper()
	base := []Option{
		WithClock(fixedClock{}),
		WithBackoff(Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond, Attempts: 5}),
	}
	return NewWriter(t.TempDir(), append(base, opts...)...)
}

// appChange renders a change for app "ns/<name>" in apps/ns/<name>.
func appChange(name string, files map[string]string) Change {
	c := Change{
		AppKey:  "ns/" + name,
		Path:    "apps/ns/" + name,
		Owner:   testOwner(name),
		Files:   map[string][]byte{},
		Message: "kubeopera: ns/" + name + " gen 1",
		// As an app's own trailer, which a batched commit keeps whole.
		Trailers: []string{"App: ns/" + name + " uid=uid-" + name},
	}
	for n, content := range files {
		c.Files[n] = []byte(content)
	}
	return c
}

func deleteChange(name string) Change {
	return Change{AppKey: "ns/" + name, Path: "apps/ns/" + name, Owner: testOwner(name), Delete: true}
}

// testOwner is the owner of app "ns/<name>".
func testOwner(name string) Owner { return Owner{ID: "uid-" + name, Name: "ns/" + name} }

// remote is a read-only view of the server's branch, fetched with go-git
// independently of the Writer.
type remote struct {
	repo *git.Repository
	head *object.Commit
}

func readRemote(t testing.TB, repo Repo, auth transport.AuthMethod) remote {
	t.Helper()
	r, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{
		URL:           repo.URL,
		Auth:          auth,
		ReferenceName: plumbing.NewBranchReferenceName(repo.branch()),
		SingleBranch:  true,
	})
	if err != nil {
		t.Fatalf("clone remote: %v", err)
	}
	ref, err := r.Head()
	if err != nil {
		t.Fatalf("remote head: %v", err)
	}
	head, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatalf("remote head commit: %v", err)
	}
	return remote{repo: r, head: head}
}

// files returns every file of the commit (default: head) by path, without
// the ownership markers (see markers).
func (r remote) files(t testing.TB, commit ...string) map[string]string {
	t.Helper()
	out := r.allFiles(t, commit...)
	for name := range out {
		if path.Base(name) == OwnerFile {
			delete(out, name)
		}
	}
	return out
}

// markers returns the content of every OwnerFile at head by folder.
func (r remote) markers(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, content := range r.allFiles(t) {
		if path.Base(name) == OwnerFile {
			out[path.Dir(name)] = content
		}
	}
	return out
}

// allFiles returns every file of the commit (default: head) by path.
func (r remote) allFiles(t testing.TB, commit ...string) map[string]string {
	t.Helper()
	c := r.head
	if len(commit) > 0 {
		var err error
		if c, err = r.repo.CommitObject(plumbing.NewHash(commit[0])); err != nil {
			t.Fatalf("commit %s: %v", commit[0], err)
		}
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatalf("tree: %v", err)
	}
	out := map[string]string{}
	err = tree.Files().ForEach(func(f *object.File) error {
		content, err := f.Contents()
		out[f.Name] = content
		return err
	})
	if err != nil {
		t.Fatalf("read files: %v", err)
	}
	return out
}

func (r remote) commitCount(t testing.TB) int {
	t.Helper()
	iter, err := r.repo.Log(&git.LogOptions{From: r.head.Hash})
	if err != nil {
		t.Fatalf("log: %v", err)
	}
	n := 0
	if err := iter.ForEach(func(*object.Commit) error { n++; return nil }); err != nil {
		t.Fatalf("log: %v", err)
	}
	return n
}

// remoteHeadOf lists the server's refs and returns the branch head ("" if
// the branch does not exist).
func remoteHeadOf(t testing.TB, repo Repo) string {
	t.Helper()
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{repo.URL}})
	refs, err := rem.List(&git.ListOptions{})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return ""
	}
	if err != nil {
		t.Fatalf("list remote: %v", err)
	}
	for _, ref := range refs {
		if ref.Name() == plumbing.NewBranchReferenceName(repo.branch()) {
			return ref.Hash().String()
		}
	}
	return ""
}

// outsideCommit plays another writer: it clones the branch, lets edit change
// the worktree, commits and pushes (forced when force is set). It returns
// errors instead of failing the test because hooks call it from the Writer's
// goroutine.
func outsideCommit(repo Repo, force bool, edit func(*git.Repository, *git.Worktree) error) (string, error) {
	r, err := git.Clone(memory.NewStorage(), memfs.New(), &git.CloneOptions{
		URL:           repo.URL,
		ReferenceName: plumbing.NewBranchReferenceName(repo.branch()),
		SingleBranch:  true,
	})
	if err != nil {
		return "", fmt.Errorf("clone: %w", err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return "", err
	}
	if err := edit(r, wt); err != nil {
		return "", fmt.Errorf("edit: %w", err)
	}
	if _, err := wt.Add("."); err != nil {
		return "", fmt.Errorf("add: %w", err)
	}
	sig := &object.Signature{Name: "someone", Email: "someone@example.com", When: testTime}
	h, err := wt.Commit("outside change", &git.CommitOptions{Author: sig})
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	ref := plumbing.NewBranchReferenceName(repo.branch())
	err = r.Push(&git.PushOptions{RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)}, Force: force})
	if err != nil {
		return "", fmt.Errorf("push: %w", err)
	}
	return h.String(), nil
}

func writeFile(name, content string) func(*git.Repository, *git.Worktree) error {
	return func(_ *git.Repository, wt *git.Worktree) error {
		if err := wt.Filesystem.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		return util.WriteFile(wt.Filesystem, name, []byte(content), 0o644)
	}
}

func apply(t testing.TB, w *Writer, repo Repo, c Change) Result {
	t.Helper()
	res, err := w.Apply(context.Background(), repo, c)
	if err != nil {
		t.Fatalf("apply %s: %v", c.AppKey, err)
	}
	return res
}

// filepathWalk calls f with every regular file under dir.
func filepathWalk(dir string, f func(path string, content []byte)) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	fsys := root.FS()
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		content, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		f(p, content)
		return nil
	})
}
