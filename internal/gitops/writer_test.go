package gitops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
)

func TestApplyFirstWriteIntoEmptyRemote(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	g.Expect(remoteHeadOf(t, repo)).To(BeEmpty(), "remote starts without the branch")
	w := newTestWriter(t, WithAuthor("tester", "tester@example.com"))

	res, err := w.Apply(context.Background(), repo, appChange("web", map[string]string{
		"deployment.yaml": "kind: Deployment\n",
		"service.yaml":    "kind: Service\n",
	}))

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
	g.Expect(res.Commit).To(Equal(remoteHeadOf(t, repo)))
	rem := readRemote(t, repo, nil)
	g.Expect(rem.files(t)).To(Equal(map[string]string{
		"apps/ns/web/deployment.yaml": "kind: Deployment\n",
		"apps/ns/web/service.yaml":    "kind: Service\n",
	}))
	g.Expect(rem.commitCount(t)).To(Equal(1))
	g.Expect(rem.head.Message).To(Equal("kubeopera: ns/web gen 1\n\nApp: ns/web uid=uid-web\n"))
	g.Expect(rem.head.Author.Name).To(Equal("tester"))
	g.Expect(rem.head.Author.Email).To(Equal("tester@example.com"))
	g.Expect(rem.head.Author.When.Equal(testTime)).To(BeTrue(), "commit time comes from the injected clock")
	g.Expect(rem.head.Committer.Name).To(Equal("tester"))
}

// A branch missing from a repository that has other branches is refused unless the change asks
// to create it; nothing is pushed. The first branch of an empty repository needs no asking.
func TestApplyRefusesAMissingBranchUnlessAsked(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t)
	w := newTestWriter(t)
	main := testRepo(srv)
	apply(t, w, main, appChange("web", map[string]string{"deployment.yaml": "v1"}))
	mainHead := remoteHeadOf(t, main)

	other := main
	other.Branch = "relase"
	_, err := w.Apply(context.Background(), other, appChange("web", map[string]string{"deployment.yaml": "v1"}))
	g.Expect(err).To(MatchError(ErrBranchNotFound))
	g.Expect(remoteHeadOf(t, other)).To(BeEmpty(), "the branch was created")
	res, err := w.Apply(context.Background(), other, deleteChange("web"))
	g.Expect(err).NotTo(HaveOccurred(), "a delete on a missing branch has nothing to do")
	g.Expect(res.Changed).To(BeFalse())
	g.Expect(remoteHeadOf(t, other)).To(BeEmpty(), "a delete created the branch")

	c := appChange("web", map[string]string{"deployment.yaml": "v1"})
	c.CreateBranch = true
	res, err = w.Apply(context.Background(), other, c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Commit).To(Equal(remoteHeadOf(t, other)))
	g.Expect(remoteHeadOf(t, main)).To(Equal(mainHead))
}

// Result.Created marks a folder's first commit only: not a later change of it, not an unchanged
// write, not a removal; a folder removed and written again is created again. A new writer (no
// memory of earlier writes) reads it from the branch's ownership markers.
func TestResultCreatedMarksAFoldersFirstCommit(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	write := func(w *Writer, c Change) Result {
		res, err := w.Apply(context.Background(), repo, c)
		g.Expect(err).NotTo(HaveOccurred())
		return res
	}
	g.Expect(write(w, appChange("web", map[string]string{"deployment.yaml": "v1"}))).To(
		And(HaveField("Changed", true), HaveField("Created", true)), "the first write")
	g.Expect(write(w, appChange("web", map[string]string{"deployment.yaml": "v2"}))).To(
		And(HaveField("Changed", true), HaveField("Created", false)), "a change of the folder")
	g.Expect(write(w, appChange("web", map[string]string{"deployment.yaml": "v2"}))).To(
		And(HaveField("Changed", false), HaveField("Created", false)), "the same content")
	fresh := newTestWriter(t)
	g.Expect(write(fresh, appChange("web", map[string]string{"deployment.yaml": "v3"}))).To(
		And(HaveField("Changed", true), HaveField("Created", false)), "a writer that never wrote the folder")
	g.Expect(write(w, deleteChange("web"))).To(And(HaveField("Changed", true), HaveField("Created", false)), "a removal")
	g.Expect(write(w, appChange("web", map[string]string{"deployment.yaml": "v4"}))).To(
		And(HaveField("Changed", true), HaveField("Created", true)), "written again after its removal")
}

func TestApplyReplacesFolder(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	apply(t, w, repo, appChange("other", map[string]string{"deployment.yaml": "other"}))
	apply(t, w, repo, appChange("web", map[string]string{
		"deployment.yaml": "v1",
		"ingress.yaml":    "stale",
		"sub/extra.yaml":  "stale too",
	}))

	res := apply(t, w, repo, appChange("web", map[string]string{
		"deployment.yaml": "v2",
		"service.yaml":    "new",
	}))

	g.Expect(res.Changed).To(BeTrue())
	g.Expect(readRemote(t, repo, nil).files(t)).To(Equal(map[string]string{
		"apps/ns/other/deployment.yaml": "other",
		"apps/ns/web/deployment.yaml":   "v2",
		"apps/ns/web/service.yaml":      "new",
	}))
}

func TestApplyIdenticalContentMakesNoCommit(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	files := map[string]string{"deployment.yaml": "a", "service.yaml": "b"}
	first := apply(t, w, repo, appChange("web", files))
	before := remoteHeadOf(t, repo)

	second := apply(t, w, repo, appChange("web", files))

	g.Expect(second).To(Equal(Result{Commit: first.Commit, Changed: false}))
	g.Expect(remoteHeadOf(t, repo)).To(Equal(before))
	g.Expect(readRemote(t, repo, nil).commitCount(t)).To(Equal(1))

	// A fresh Writer (new clone, e.g. after a restart) agrees.
	third := apply(t, newTestWriter(t), repo, appChange("web", files))
	g.Expect(third).To(Equal(Result{Commit: before, Changed: false}))
}

func TestApplyDeleteFolder(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)

	// Deleting from an empty remote succeeds and writes nothing.
	res := apply(t, w, repo, deleteChange("web"))
	g.Expect(res).To(Equal(Result{}))
	g.Expect(remoteHeadOf(t, repo)).To(BeEmpty())

	apply(t, w, repo, appChange("web", map[string]string{"deployment.yaml": "a", "sub/x.yaml": "x"}))
	apply(t, w, repo, appChange("api", map[string]string{"deployment.yaml": "b"}))

	res = apply(t, w, repo, deleteChange("web"))
	g.Expect(res.Changed).To(BeTrue())
	g.Expect(res.Commit).To(Equal(remoteHeadOf(t, repo)))
	rem := readRemote(t, repo, nil)
	g.Expect(rem.files(t)).To(Equal(map[string]string{"apps/ns/api/deployment.yaml": "b"}))
	g.Expect(rem.head.Message).To(Equal("kubeopera: delete ns/web\n"))

	again := apply(t, w, repo, deleteChange("web"))
	g.Expect(again).To(Equal(Result{Commit: res.Commit, Changed: false}))
	g.Expect(remoteHeadOf(t, repo)).To(Equal(res.Commit))
}

// TestApplyBatchesConcurrentCallers holds the first push until all callers
// are queued, so the grouping is guaranteed rather than timing-dependent:
// the first batch is in flight, everyone else must land in the next one.
func TestApplyBatchesConcurrentCallers(t *testing.T) {
	g := NewWithT(t)
	const apps = 30
	repo := testRepo(newServer(t))
	gate := holdFirstPushUntilQueued(apps)
	w := newTestWriter(t, gate.options()...)

	names := make([]string, apps)
	for i := range names {
		names[i] = fmt.Sprintf("app%02d", i)
	}

	results, errs := applyConcurrently(w, repo, names)

	rem := readRemote(t, repo, nil)
	files := rem.files(t)
	commits := rem.commitCount(t)
	t.Logf("%d concurrent Apply calls produced %d commits and %d pushes", apps, commits, gate.pushes.Load())
	for i, name := range names {
		g.Expect(errs[i]).NotTo(HaveOccurred(), name)
		g.Expect(results[i].Changed).To(BeTrue(), name)
		g.Expect(files).To(HaveKeyWithValue("apps/ns/"+name+"/deployment.yaml", "name: "+name))
		// The returned commit really contains the caller's change.
		g.Expect(rem.files(t, results[i].Commit)).To(HaveKey("apps/ns/"+name+"/deployment.yaml"), name)
	}
	g.Expect(files).To(HaveLen(apps))
	g.Expect(commits).To(BeNumerically("<", apps))
	g.Expect(commits).To(BeNumerically("<=", 2), "first batch in flight, all others queued behind it")
	g.Expect(int(gate.pushes.Load())).To(Equal(commits))
	// Each commit names exactly the apps it contains.
	iter, err := rem.repo.Log(&git.LogOptions{From: rem.head.Hash})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(iter.ForEach(func(c *object.Commit) error {
		stats, err := c.Stats()
		if err != nil {
			return err
		}
		// Two files per app: deployment.yaml and the ownership marker.
		if n := len(stats) / 2; n == 1 {
			g.Expect(c.Message).To(MatchRegexp(`^kubeopera: ns/app\d\d gen 1\n\nApp: ns/app\d\d uid=uid-app\d\d\n$`))
		} else {
			g.Expect(c.Message).To(MatchRegexp(fmt.Sprintf(`^kubeopera: update %d apps\n\n(- kubeopera: ns/app\d\d gen 1\n){%d}\n(App: ns/app\d\d uid=uid-app\d\d\n){%d}$`, n, n, n)))
			// Every app of the commit has its own trailer line.
			for _, st := range stats {
				if app := path.Base(path.Dir(st.Name)); path.Base(st.Name) == "deployment.yaml" {
					g.Expect(c.Message).To(ContainSubstring("\nApp: ns/%s uid=uid-%s\n", app, app))
				}
			}
		}
		return nil
	})).To(Succeed())
}

// firstPushGate blocks the first push until n Apply calls are queued.
type firstPushGate struct {
	n         int32
	queued    atomic.Int32
	pushes    atomic.Int32
	allQueued chan struct{}
}

func holdFirstPushUntilQueued(n int32) *firstPushGate {
	return &firstPushGate{n: n, allQueued: make(chan struct{})}
}

func (gate *firstPushGate) options() []Option {
	return []Option{
		func(o *options) {
			o.onQueued = func() {
				if gate.queued.Add(1) == gate.n {
					close(gate.allQueued)
				}
			}
		},
		WithBeforePush(func() {
			if gate.pushes.Add(1) == 1 {
				select {
				case <-gate.allQueued:
				case <-time.After(time.Minute):
					// Let the test go on and fail on the commit count.
				}
			}
		}),
	}
}

// applyConcurrently applies one change per app name at once and waits.
func applyConcurrently(w *Writer, repo Repo, names []string) ([]Result, []error) {
	results := make([]Result, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			results[i], errs[i] = w.Apply(context.Background(), repo,
				appChange(name, map[string]string{"deployment.yaml": "name: " + name}))
		})
	}
	wg.Wait()
	return results, errs
}

func TestApplyBoundsBatchSize(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	gate := holdFirstPushUntilQueued(5)
	w := newTestWriter(t, append(gate.options(), WithMaxBatch(2))...)

	_, errs := applyConcurrently(w, repo, []string{"a", "b", "c", "d", "e"})

	g.Expect(errs).To(HaveEach(Not(HaveOccurred())))
	rem := readRemote(t, repo, nil)
	g.Expect(rem.files(t)).To(HaveLen(5))
	// The first batch (1 or 2 changes) is in flight while the other 3 or 4
	// wait; those go out 2 at a time: 3 commits either way.
	g.Expect(rem.commitCount(t)).To(Equal(3))
}

func TestApplyRefusesBlockedFolder(t *testing.T) {
	for name, tc := range map[string]struct {
		block func(outside string) func(*git.Repository, *git.Worktree) error
		want  string
	}{
		"symlink to outside the clone": {
			block: func(outside string) func(*git.Repository, *git.Worktree) error {
				return func(_ *git.Repository, wt *git.Worktree) error {
					if err := wt.Filesystem.MkdirAll("apps", 0o750); err != nil {
						return err
					}
					return wt.Filesystem.Symlink(outside, "apps/ns")
				}
			},
			want: "symbolic link",
		},
		"file in place of a parent folder": {
			block: func(string) func(*git.Repository, *git.Worktree) error { return writeFile("apps/ns", "a file") },
			want:  "is a file",
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			repo := testRepo(newServer(t))
			w := newTestWriter(t)
			apply(t, w, repo, Change{AppKey: "seed", Path: "other/seed", Owner: testOwner("seed"), Files: map[string][]byte{"a.yaml": nil}})
			outside := t.TempDir()
			g.Expect(os.MkdirAll(filepath.Join(outside, "web"), 0o750)).To(Succeed())
			keep := filepath.Join(outside, "web", "keep.txt")
			g.Expect(os.WriteFile(keep, []byte("precious"), 0o600)).To(Succeed())
			_, err := outsideCommit(repo, false, tc.block(outside))
			g.Expect(err).NotTo(HaveOccurred())

			_, err = w.Apply(context.Background(), repo, appChange("web", map[string]string{"a.yaml": "x"}))

			g.Expect(err).To(MatchError(ErrInvalidPath))
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
			g.Expect(keep).To(BeARegularFile(), "nothing outside the clone is touched")
			g.Expect(filepath.Join(outside, "web", "a.yaml")).NotTo(BeAnExistingFile())
			// The repository is not stuck for other apps.
			res, err := w.Apply(context.Background(), repo, Change{AppKey: "ok", Path: "other/ok", Owner: testOwner("ok"), Files: map[string][]byte{"a.yaml": nil}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Changed).To(BeTrue())
		})
	}
}

func TestApplyRetriesNonFastForward(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	apply(t, newTestWriter(t), repo, appChange("first", map[string]string{"a.yaml": "1"}))

	var attempts atomic.Int32
	var outside string
	var outsideErr error
	w := newTestWriter(t, WithBeforePush(func() {
		if attempts.Add(1) == 1 {
			// Another writer wins the race between our fetch and our push.
			outside, outsideErr = outsideCommit(repo, false, writeFile("outside/README.md", "hello"))
		}
	}))

	res, err := w.Apply(context.Background(), repo, appChange("web", map[string]string{"deployment.yaml": "x"}))

	g.Expect(outsideErr).NotTo(HaveOccurred())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(attempts.Load()).To(BeEquivalentTo(2), "one rejected push, one retry")
	rem := readRemote(t, repo, nil)
	g.Expect(res.Commit).To(Equal(rem.head.Hash.String()))
	g.Expect(rem.head.ParentHashes).To(Equal([]plumbing.Hash{plumbing.NewHash(outside)}), "rebuilt on the outside commit, not forced over it")
	g.Expect(rem.files(t)).To(Equal(map[string]string{
		"apps/ns/first/a.yaml":        "1",
		"outside/README.md":           "hello",
		"apps/ns/web/deployment.yaml": "x",
	}))
	g.Expect(rem.commitCount(t)).To(Equal(3))
}

func TestApplyGivesUpWithErrPushConflict(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	apply(t, newTestWriter(t), repo, appChange("first", map[string]string{"a.yaml": "1"}))

	var attempts atomic.Int32
	var hookErrs []error
	w := newTestWriter(t,
		WithBackoff(Backoff{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 3}),
		WithBeforePush(func() {
			n := attempts.Add(1)
			_, err := outsideCommit(repo, false, writeFile("outside.txt", fmt.Sprint(n)))
			hookErrs = append(hookErrs, err)
		}))

	_, err := w.Apply(context.Background(), repo, appChange("web", map[string]string{"deployment.yaml": "x"}))

	g.Expect(hookErrs).To(HaveEach(Not(HaveOccurred())))
	g.Expect(err).To(MatchError(ErrPushConflict))
	g.Expect(attempts.Load()).To(BeEquivalentTo(3))
	g.Expect(readRemote(t, repo, nil).files(t)).NotTo(HaveKey("apps/ns/web/deployment.yaml"))
}

// TestApplyAfterExternalForceReset rewrites the remote branch behind the
// Writer's back: its clone is now ahead of, and diverged from, the remote.
func TestApplyAfterExternalForceReset(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	c1 := apply(t, w, repo, appChange("one", map[string]string{"a.yaml": "1"})).Commit
	apply(t, w, repo, appChange("two", map[string]string{"a.yaml": "2"}))

	_, err := outsideCommit(repo, true, func(r *git.Repository, wt *git.Worktree) error {
		if err := wt.Reset(&git.ResetOptions{Commit: plumbing.NewHash(c1), Mode: git.HardReset}); err != nil {
			return err
		}
		return writeFile("outside.txt", "reset")(r, wt)
	})
	g.Expect(err).NotTo(HaveOccurred())

	three := apply(t, w, repo, appChange("three", map[string]string{"a.yaml": "3"}))
	// "two" is gone from the remote; the Writer must not believe it is there.
	two := apply(t, w, repo, appChange("two", map[string]string{"a.yaml": "2"}))

	g.Expect(three.Changed).To(BeTrue())
	g.Expect(two.Changed).To(BeTrue(), "a stale clone would report 'two' as unchanged")
	g.Expect(readRemote(t, repo, nil).files(t)).To(Equal(map[string]string{
		"apps/ns/one/a.yaml":   "1",
		"apps/ns/two/a.yaml":   "2",
		"apps/ns/three/a.yaml": "3",
		"outside.txt":          "reset",
	}))
}

func TestApplyRecoversFromBrokenClone(t *testing.T) {
	for name, breakClone := range map[string]func(dir string) error{
		"objects deleted": func(dir string) error {
			return os.RemoveAll(filepath.Join(dir, ".git", "objects"))
		},
		"config garbage": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[[[ not git"), 0o600)
		},
		"remote changed": func(dir string) error {
			r, err := git.PlainOpen(dir)
			if err != nil {
				return err
			}
			if err := r.DeleteRemote(remoteName); err != nil {
				return err
			}
			_, err = r.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{"http://127.0.0.1:1/elsewhere.git"}})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			repo := testRepo(newServer(t))
			cache := t.TempDir()
			w := NewWriter(cache, WithClock(fixedClock{}))
			apply(t, w, repo, appChange("one", map[string]string{"a.yaml": "1"}))
			g.Expect(breakClone(filepath.Join(cache, cloneDirName(repo.URL, repo.Branch)))).To(Succeed())

			res, err := w.Apply(context.Background(), repo, appChange("two", map[string]string{"a.yaml": "2"}))

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Changed).To(BeTrue())
			g.Expect(readRemote(t, repo, nil).files(t)).To(Equal(map[string]string{
				"apps/ns/one/a.yaml": "1",
				"apps/ns/two/a.yaml": "2",
			}))
		})
	}
}

func TestForgetDropsClone(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	cache := t.TempDir()
	w := NewWriter(cache)
	apply(t, w, repo, appChange("one", map[string]string{"a.yaml": "1"}))
	dir := filepath.Join(cache, cloneDirName(repo.URL, repo.Branch))
	g.Expect(dir).To(BeADirectory())

	g.Expect(w.Forget(repo)).To(Succeed())

	g.Expect(dir).NotTo(BeAnExistingFile())
	res := apply(t, w, repo, appChange("one", map[string]string{"a.yaml": "1"}))
	g.Expect(res.Changed).To(BeFalse())
	g.Expect(dir).To(BeADirectory())
}

func TestApplyWithdrawsCancelledWaiter(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	var queued atomic.Int32
	secondQueued := make(chan struct{})
	inPush := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	w := newTestWriter(t,
		func(o *options) {
			o.onQueued = func() {
				if queued.Add(1) == 2 {
					close(secondQueued)
				}
			}
		},
		WithBeforePush(func() {
			once.Do(func() {
				close(inPush)
				<-release
			})
		}),
	)

	firstDone := make(chan error, 1)
	go func() {
		_, err := w.Apply(context.Background(), repo, appChange("first", map[string]string{"a.yaml": "1"}))
		firstDone <- err
	}()
	<-inPush // the first change is being pushed; the next one must wait in the queue
	ctx, cancel := context.WithCancel(context.Background())
	secondDone := make(chan error, 1)
	go func() {
		_, err := w.Apply(ctx, repo, appChange("second", map[string]string{"a.yaml": "2"}))
		secondDone <- err
	}()
	<-secondQueued
	cancel()
	g.Expect(<-secondDone).To(MatchError(context.Canceled))
	close(release)
	g.Expect(<-firstDone).NotTo(HaveOccurred())

	files := readRemote(t, repo, nil).files(t)
	g.Expect(files).To(HaveKey("apps/ns/first/a.yaml"))
	g.Expect(files).NotTo(HaveKey("apps/ns/second/a.yaml"), "a withdrawn change is never written")
}

func TestApplyRejectsInvalidInput(t *testing.T) {
	valid := appChange("web", map[string]string{"a.yaml": "x"})
	// Nothing listens here: validation must fail before any network access.
	repo := Repo{URL: "http://127.0.0.1:1/org/apps.git", Branch: "main"}
	tests := []struct {
		name   string
		repo   func(*Repo)
		change func(*Change)
		want   error
	}{
		{name: "parent dir", change: func(c *Change) { c.Path = "../x" }, want: ErrInvalidPath},
		{name: "absolute", change: func(c *Change) { c.Path = "/abs" }, want: ErrInvalidPath},
		{name: "empty", change: func(c *Change) { c.Path = "" }, want: ErrInvalidPath},
		{name: "git dir", change: func(c *Change) { c.Path = ".git/x" }, want: ErrInvalidPath},
		{name: "nested git dir", change: func(c *Change) { c.Path = "apps/.GIT/x" }, want: ErrInvalidPath},
		{name: "inner parent", change: func(c *Change) { c.Path = "apps/../x" }, want: ErrInvalidPath},
		{name: "dot slash", change: func(c *Change) { c.Path = "./apps" }, want: ErrInvalidPath},
		{name: "trailing slash", change: func(c *Change) { c.Path = "apps/" }, want: ErrInvalidPath},
		{name: "root", change: func(c *Change) { c.Path = "." }, want: ErrInvalidPath},
		{name: "backslash", change: func(c *Change) { c.Path = `apps\x` }, want: ErrInvalidPath},
		{name: "file escapes", change: func(c *Change) { c.Files = map[string][]byte{"../evil": nil} }, want: ErrInvalidPath},
		{name: "file into git", change: func(c *Change) { c.Files = map[string][]byte{".git/config": nil} }, want: ErrInvalidPath},
		{name: "file and dir clash", change: func(c *Change) { c.Files = map[string][]byte{"a": nil, "a/b": nil} }, want: ErrInvalidPath},
		{name: "no files", change: func(c *Change) { c.Files = nil }, want: ErrInvalidChange},
		{name: "delete with files", change: func(c *Change) { c.Delete = true }, want: ErrInvalidChange},
		{name: "no app key", change: func(c *Change) { c.AppKey = "" }, want: ErrInvalidChange},
		{name: "no owner", change: func(c *Change) { c.Owner = Owner{} }, want: ErrInvalidChange},
		{name: "owner file given", change: func(c *Change) { c.Files[OwnerFile] = []byte("uid: forged") }, want: ErrInvalidChange},
		{name: "file scheme", repo: func(r *Repo) { r.URL = "file:///tmp/x" }, want: ErrInvalidChange},
		{name: "ssh without auth", repo: func(r *Repo) { r.URL = "ssh://git@example.com/x.git" }, want: ErrInvalidAuth},
		{name: "bad branch", repo: func(r *Repo) { r.Branch = "a..b" }, want: ErrInvalidChange},
		{name: "password in URL", repo: func(r *Repo) { r.URL = "https://u:hunter2-secret@example.com/x.git" }, want: ErrInvalidChange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r, c := repo, valid.deepCopy()
			if tt.repo != nil {
				tt.repo(&r)
			}
			if tt.change != nil {
				tt.change(&c)
			}
			_, err := NewWriter(t.TempDir()).Apply(context.Background(), r, c)
			g.Expect(err).To(MatchError(tt.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("hunter2-secret"))
		})
	}

	t.Run("valid input passes", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(repo.validate()).To(Succeed())
		c := valid.deepCopy()
		c.Files["sub/dir/b.yaml"] = nil
		g.Expect(c.validate()).To(Succeed())
		g.Expect(Change{AppKey: "a", Path: "apps/a", Owner: testOwner("a"), Delete: true}.validate()).To(Succeed())
	})
}

func TestCloneDirNameHidesURL(t *testing.T) {
	g := NewWithT(t)
	a := cloneDirName("https://git.example.com/org/repo.git", "main")
	g.Expect(a).To(MatchRegexp(`^[0-9a-f]{32}$`))
	g.Expect(a).To(Equal(cloneDirName("https://git.example.com/org/repo.git", "main")))
	g.Expect(a).NotTo(Equal(cloneDirName("https://git.example.com/org/repo.git", "dev")))
	g.Expect(a).NotTo(Equal(cloneDirName("https://git.example.com/org/other.git", "main")))
}

func TestCommitMessage(t *testing.T) {
	g := NewWithT(t)
	reqs := []*request{
		{change: Change{AppKey: "ns/b", Message: "kubeopera: ns/b gen 2\n\ndetails"}},
		{change: Change{AppKey: "ns/a", Message: "bump image"}},
		{change: Change{AppKey: "ns/c", Delete: true}},
	}
	g.Expect(commitMessage(reqs[:1])).To(Equal("kubeopera: ns/b gen 2\n\ndetails\n"))
	g.Expect(commitMessage(reqs)).To(Equal("kubeopera: update 3 apps\n\n" +
		"- kubeopera: delete ns/c\n" +
		"- kubeopera: ns/b gen 2\n" +
		"- ns/a: bump image\n"))

	// Trailers end the message; in a batch every change's are kept, in one last paragraph.
	reqs[0].change.Trailers = []string{"App: ns/b generation=2"}
	reqs[2].change.Trailers = []string{"App: ns/c generation=7", "Requested-By: ci"}
	g.Expect(commitMessage(reqs[:1])).To(Equal("kubeopera: ns/b gen 2\n\ndetails\n\nApp: ns/b generation=2\n"))
	g.Expect(commitMessage(reqs)).To(Equal("kubeopera: update 3 apps\n\n" +
		"- kubeopera: delete ns/c\n" +
		"- kubeopera: ns/b gen 2\n" +
		"- ns/a: bump image\n\n" +
		"App: ns/b generation=2\n" +
		"App: ns/c generation=7\n" +
		"Requested-By: ci\n"))
}

func TestTrailersMustBeTrailerLines(t *testing.T) {
	g := NewWithT(t)
	base := Change{AppKey: "ns/a", Path: "apps/ns/a", Owner: Owner{ID: "uid-a", Name: "ns/a"}, Files: map[string][]byte{"a.yaml": []byte("a")}}
	for _, bad := range []string{"no separator", ": no key", "Key:", "Key: two\nlines", "Key: cr\r", "Bad Key: v", "1st: v", "Key: " + strings.Repeat("v", maxTrailerLength)} {
		c := base
		c.Trailers = []string{bad}
		g.Expect(c.validate()).To(MatchError(ErrInvalidChange), "%q", bad)
	}
	c := base
	c.Trailers = []string{"KubeOperaApp: ns/a uid=uid-a generation=3", "X-2: v: with colon"}
	g.Expect(c.validate()).To(Succeed())
}

func TestReleaseFreesQueueAndClone(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t)
	cache := t.TempDir()
	w := NewWriter(cache, WithClock(fixedClock{}))
	var repos []Repo
	for i := range 5 {
		repo := Repo{URL: fmt.Sprintf("%s/org/apps-%d.git", srv.HTTPAddress(), i), Branch: testBranch}
		repos = append(repos, repo)
		apply(t, w, repo, appChange("web", map[string]string{"a.yaml": "x"}))
	}
	g.Expect(w.Repositories()).To(Equal(5))
	entries, err := os.ReadDir(cache)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(5))
	for _, repo := range repos {
		g.Expect(w.Release(repo)).To(Succeed())
	}
	// A branch whose batch goroutine has not ended yet is dropped when it ends.
	g.Eventually(w.Repositories).Should(BeZero())
	g.Eventually(func() ([]os.DirEntry, error) { return os.ReadDir(cache) }).Should(BeEmpty())
	// A released repository is written again from a fresh clone.
	res := apply(t, w, repos[0], appChange("web", map[string]string{"a.yaml": "y"}))
	g.Expect(res.Changed).To(BeTrue())
}

func TestShallowCloneFetchesOnlyTheHeadAndPushes(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	seed := newTestWriter(t)
	for i := range 5 {
		apply(t, seed, repo, appChange("seed", map[string]string{"a.yaml": fmt.Sprint(i)}))
	}
	before := readRemote(t, repo, nil)
	iter, err := before.repo.Log(&git.LogOptions{From: before.head.Hash})
	g.Expect(err).NotTo(HaveOccurred())
	var history []plumbing.Hash
	g.Expect(iter.ForEach(func(c *object.Commit) error { history = append(history, c.Hash); return nil })).To(Succeed())
	g.Expect(history).To(HaveLen(5))

	cache := t.TempDir()
	w := NewWriter(cache, WithClock(fixedClock{}))
	res := apply(t, w, repo, appChange("web", map[string]string{"a.yaml": "web"}))
	g.Expect(res.Changed).To(BeTrue())

	// The push from the shallow clone is a normal fast-forward on the full history.
	after := readRemote(t, repo, nil)
	g.Expect(after.commitCount(t)).To(Equal(6))
	g.Expect(after.head.ParentHashes).To(Equal([]plumbing.Hash{before.head.Hash}))
	g.Expect(after.files(t)).To(HaveKeyWithValue("apps/ns/seed/a.yaml", "4"))
	// The local clone holds the head it built on, not the history before it.
	local, err := git.PlainOpen(filepath.Join(cache, cloneDirName(repo.URL, repo.branch())))
	g.Expect(err).NotTo(HaveOccurred())
	shallow, err := local.Storer.Shallow()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(shallow).NotTo(BeEmpty())
	_, err = local.CommitObject(history[len(history)-1])
	g.Expect(err).To(MatchError(plumbing.ErrObjectNotFound), "the first commit was fetched")
	// Later writes on top of outside commits keep working.
	_, err = outsideCommit(repo, false, writeFile("outside.txt", "x"))
	g.Expect(err).NotTo(HaveOccurred())
	apply(t, w, repo, appChange("web", map[string]string{"a.yaml": "web 2"}))
	g.Expect(readRemote(t, repo, nil).commitCount(t)).To(Equal(8))
}

func TestRepositoryOverTheSizeLimitIsRefused(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	noise := make([]byte, 64<<10)
	_, err := rand.Read(noise) // incompressible
	g.Expect(err).NotTo(HaveOccurred())
	apply(t, newTestWriter(t), repo, appChange("big", map[string]string{"blob.yaml": hex.EncodeToString(noise)}))

	cache := t.TempDir()
	w := NewWriter(cache, WithMaxRepositorySize(16<<10))
	_, err = w.Apply(context.Background(), repo, appChange("web", map[string]string{"a.yaml": "x"}))
	g.Expect(err).To(MatchError(ErrRepositoryTooLarge))
	entries, err := os.ReadDir(cache)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "the oversized clone is deleted")
	g.Expect(readRemote(t, repo, nil).commitCount(t)).To(Equal(1), "nothing was pushed")

	// Within the limit it works.
	roomy := NewWriter(t.TempDir(), WithMaxRepositorySize(1<<20))
	apply(t, roomy, repo, appChange("web", map[string]string{"a.yaml": "x"}))
}

func TestLogReadsTheBranchTrailersNewestFirst(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := testRepo(newServer(t))
	w := newTestWriter(t)

	entries, err := w.Log(ctx, repo)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(BeEmpty(), "an empty repository has no history")

	var commits []string
	for i, name := range []string{"a", "b", "a"} {
		c := appChange(name, map[string]string{"deployment.yaml": fmt.Sprintf("v%d", i)})
		c.Trailers = []string{fmt.Sprintf("App: ns/%s step=%d", name, i)}
		res, err := w.Apply(ctx, repo, c)
		g.Expect(err).NotTo(HaveOccurred())
		commits = append(commits, res.Commit)
	}
	// A clone that lost everything reads the same history from the server.
	for _, writer := range []*Writer{w, newTestWriter(t)} {
		entries, err = writer.Log(ctx, repo)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(entries).To(HaveLen(3))
		for i, e := range entries {
			step := 2 - i
			g.Expect(e.Commit).To(Equal(commits[step]))
			g.Expect(e.Trailers).To(Equal([]string{fmt.Sprintf("App: ns/%s step=%d", []string{"a", "b", "a"}[step], step)}))
			g.Expect(e.When).NotTo(BeZero())
		}
	}
}

func TestLogIsBoundedByTheFetchDepth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	repo := testRepo(newServer(t))
	w := newTestWriter(t)
	for i := range RevisionFetchDepth + 5 {
		_, err := w.Apply(ctx, repo, appChange("a", map[string]string{"deployment.yaml": fmt.Sprintf("v%d", i)}))
		g.Expect(err).NotTo(HaveOccurred())
	}
	entries, err := newTestWriter(t).Log(ctx, repo)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(RevisionFetchDepth))
	g.Expect(entries[0].Trailers).To(Equal([]string{"App: ns/a uid=uid-a"}))
}

func TestTrailerLines(t *testing.T) {
	g := NewWithT(t)
	g.Expect(trailerLines("subject\n\nbody\n\nA: 1\nB-2: two words\n")).To(Equal([]string{"A: 1", "B-2: two words"}))
	g.Expect(trailerLines("subject\n")).To(BeEmpty(), "no paragraph after the subject")
	g.Expect(trailerLines("subject\n\nA: 1\nnot a trailer\n")).To(BeEmpty(), "a paragraph of text")
}
