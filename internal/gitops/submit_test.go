package gitops

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// heldPush blocks every push until released, and tells when the first one is waiting.
type heldPush struct {
	pushes  atomic.Int32
	waiting chan struct{}
	release chan struct{}
}

func newHeldPush() *heldPush {
	return &heldPush{waiting: make(chan struct{}), release: make(chan struct{})}
}

func (h *heldPush) option() Option {
	return WithBeforePush(func() {
		if h.pushes.Add(1) == 1 {
			close(h.waiting)
		}
		<-h.release
	})
}

// holdFirstPush submits a change of app "first" and returns once its push is held, so that
// the changes submitted next queue behind it.
func holdFirstPush(g Gomega, w *Writer, held *heldPush, repo Repo) *Pending {
	first := submit(g, w, repo, "first", "first")
	<-held.waiting
	return first
}

// submit submits the deployment.yaml of app with content, without a callback.
func submit(g Gomega, w *Writer, repo Repo, app, content string) *Pending {
	p, err := w.Submit(context.Background(), repo, appChange(app, map[string]string{"deployment.yaml": content}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	return p
}

// Submit returns while the push holding its change is still pending; the outcome and the
// callback arrive once the push is done, and the change is on the remote.
func TestSubmitDoesNotWaitForThePush(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	held := newHeldPush()
	w := newTestWriter(t, held.option())

	var notified atomic.Int32
	p, err := w.Submit(context.Background(), repo, appChange("a", map[string]string{"deployment.yaml": "a"}), func() { notified.Add(1) })
	g.Expect(err).NotTo(HaveOccurred())
	<-held.waiting
	// The push is held: Submit has returned, nothing is decided.
	_, err = p.Result()
	g.Expect(err).To(MatchError(ErrPending))
	g.Expect(notified.Load()).To(BeZero())

	close(held.release)
	<-p.Done()
	res, err := p.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
	// The callback runs after Done is closed (so that the requeued pass finds the result).
	g.Eventually(notified.Load).Should(Equal(int32(1)))
	g.Expect(remoteHeadOf(t, repo)).To(Equal(res.Commit))
	g.Expect(readRemote(t, repo, nil).files(t)).To(HaveKeyWithValue("apps/ns/a/deployment.yaml", "a"))
}

// A change of a folder that is still queued replaces the queued one: only the newer content is
// pushed, once, and both callers get its outcome.
func TestSubmitReplacesAQueuedChangeOfTheSameFolder(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	held := newHeldPush()
	w := newTestWriter(t, held.option())

	// The first batch (app "first") is held in its push; "a" queues behind it, twice.
	first := holdFirstPush(g, w, held, repo)
	var notified atomic.Int32
	older, err := w.Submit(context.Background(), repo, appChange("a", map[string]string{"deployment.yaml": "v1"}), func() { notified.Add(1) })
	g.Expect(err).NotTo(HaveOccurred())
	newer, err := w.Submit(context.Background(), repo, appChange("a", map[string]string{"deployment.yaml": "v2"}), func() { notified.Add(1) })
	g.Expect(err).NotTo(HaveOccurred())

	close(held.release)
	for _, p := range []*Pending{first, older, newer} {
		<-p.Done()
	}
	olderRes, olderErr := older.Result()
	newerRes, newerErr := newer.Result()
	g.Expect(olderErr).NotTo(HaveOccurred())
	g.Expect(newerErr).NotTo(HaveOccurred())
	g.Expect(olderRes).To(Equal(newerRes))
	g.Eventually(notified.Load).Should(Equal(int32(2)), "both callers are told")

	rem := readRemote(t, repo, nil)
	g.Expect(rem.files(t)).To(HaveKeyWithValue("apps/ns/a/deployment.yaml", "v2"))
	// Two pushes: "first", then "a" once with v2 (v1 was never pushed).
	g.Expect(held.pushes.Load()).To(Equal(int32(2)))
	g.Expect(rem.commitCount(t)).To(Equal(2))
}

// A Release that finds a write still queued (an app deleted while its last change waits behind a
// push) is carried out once the queue is idle: the queue and the clone do not outlive the write.
func TestReleaseWhileAWriteIsQueuedDropsTheBranchOnceIdle(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	held := newHeldPush()
	cache := t.TempDir()
	w := NewWriter(cache, WithClock(fixedClock{}), held.option())

	first := holdFirstPush(g, w, held, repo)
	queued := submit(g, w, repo, "a", "a")

	g.Expect(w.Release(repo)).To(Succeed())
	g.Expect(w.Repositories()).To(Equal(1), "kept while a write is queued")

	close(held.release)
	for _, p := range []*Pending{first, queued} {
		<-p.Done()
		_, err := p.Result()
		g.Expect(err).NotTo(HaveOccurred(), "the queued writes are still pushed")
	}
	g.Expect(readRemote(t, repo, nil).files(t)).To(HaveKeyWithValue("apps/ns/a/deployment.yaml", "a"))
	g.Eventually(w.Repositories).Should(BeZero())
	g.Eventually(func() ([]os.DirEntry, error) { return os.ReadDir(cache) }).Should(BeEmpty())
}

// A change that arrives after such a Release takes the branch back: it is not dropped when the
// queue runs empty.
func TestWriteAfterAPendingReleaseKeepsTheBranch(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	held := newHeldPush()
	w := newTestWriter(t, held.option())

	first := holdFirstPush(g, w, held, repo)
	queued := submit(g, w, repo, "a", "a")
	g.Expect(w.Release(repo)).To(Succeed()) // recorded: "a" is queued
	again := submit(g, w, repo, "b", "b")
	close(held.release)
	for _, p := range []*Pending{first, queued, again} {
		<-p.Done()
	}
	g.Expect(readRemote(t, repo, nil).files(t)).To(HaveKeyWithValue("apps/ns/b/deployment.yaml", "b"))
	// Once the drain goroutine has ended (the point where a pending Release is carried out),
	// the branch's state is still the same one: "b" took it back.
	st := stateOf(w, repo)
	g.Expect(st).NotTo(BeNil())
	g.Eventually(func() bool { st.mu.Lock(); defer st.mu.Unlock(); return st.running }).Should(BeFalse())
	g.Consistently(func() *repoState { return stateOf(w, repo) }, 300*time.Millisecond, 10*time.Millisecond).Should(BeIdenticalTo(st))
}

// stateOf is the Writer's state of repo's branch (nil when it keeps none).
func stateOf(w *Writer, repo Repo) *repoState {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.repos[cloneDirName(repo.URL, repo.branch())]
}
