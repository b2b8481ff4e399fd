package gitops

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// steppedClock is a clock the test moves.
type steppedClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppedClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// expectRig is a Writer with an hour-long window whose timers the test fires (steppedWindow) and
// a clock the test moves, writing n repositories of one server; every push is counted and
// signalled on pushed. Nothing in it depends on wall-clock time: the test decides when each
// window ends and sees, for each, whether the Writer started another one or pushed.
type expectRig struct {
	w      *Writer
	repos  []Repo
	win    *steppedWindow
	clock  *steppedClock
	pushes atomic.Int32
	pushed chan struct{}
}

func newExpectRig(t *testing.T, n int) *expectRig {
	srv := newServer(t)
	rig := &expectRig{
		repos:  make([]Repo, n),
		win:    &steppedWindow{started: make(chan chan time.Time, 4*n)},
		clock:  &steppedClock{now: testTime},
		pushed: make(chan struct{}, 64),
	}
	for i := range rig.repos {
		rig.repos[i] = Repo{URL: fmt.Sprintf("%s/org/apps-%d.git", srv.HTTPAddress(), i), Branch: testBranch}
	}
	rig.w = newTestWriter(t, WithBatchWindow(time.Hour), rig.win.option(), WithClock(rig.clock),
		WithBeforePush(func() {
			rig.pushes.Add(1)
			select {
			case rig.pushed <- struct{}{}:
			default:
			}
		}))
	return rig
}

func (rig *expectRig) submit(t *testing.T, repo Repo, name string) *Pending {
	t.Helper()
	p, err := rig.w.Submit(context.Background(), repo, appChange(name, map[string]string{"deployment.yaml": name}), nil)
	if err != nil {
		t.Fatalf("submit %s: %v", name, err)
	}
	return p
}

// nextWindow returns the timer of the next window a queue starts; it fails the test when a batch
// is pushed first.
func (rig *expectRig) nextWindow(t *testing.T, why string) chan time.Time {
	t.Helper()
	select {
	case timer := <-rig.win.started:
		return timer
	case <-rig.pushed:
		t.Fatalf("a batch was pushed where its window should have been extended: %s", why)
		return nil
	}
}

// awaitPush waits for the next push; it fails the test when a queue starts another window first.
func (rig *expectRig) awaitPush(t *testing.T, why string) {
	t.Helper()
	select {
	case <-rig.pushed:
	case <-rig.win.started:
		t.Fatalf("another window was started where the batch should have been pushed: %s", why)
	}
}

// endWindows ends every window of timers (one per queue) and returns the next window of each
// queue; it fails the test when one of them pushes instead.
func (rig *expectRig) endWindows(t *testing.T, timers []chan time.Time, why string) []chan time.Time {
	t.Helper()
	for _, timer := range timers {
		timer <- time.Time{}
	}
	next := make([]chan time.Time, len(timers))
	for i := range next {
		next[i] = rig.nextWindow(t, why)
	}
	return next
}

// A burst of apps reconciled at once over several repositories: every app is announced first
// (Expect), then each repository receives one change per round, and between two rounds a window
// ends in which no change arrived (a quiet window), as when 200 apps over 20 repositories are
// reconciled by 16 workers and one repository's changes arrive further apart than a window. The
// announced changes hold each repository's batch, beyond maxWindowsPerBatch windows, until the
// last one is submitted: one push per repository. Without the announcements the first quiet
// window ends each batch.
func TestAnnouncedChangesShareOnePushPerRepository(t *testing.T) {
	g := NewWithT(t)
	const repos, rounds = 3, 4
	rig := newExpectRig(t, repos)
	name := func(r, j int) string { return fmt.Sprintf("app-%d-%d", r, j) }
	for r := range rounds {
		for j := range repos {
			rig.w.Expect(rig.repos[j], "ns/"+name(r, j))
		}
	}

	var all []*Pending
	var timers []chan time.Time
	for r := range rounds {
		for j := range repos {
			all = append(all, rig.submit(t, rig.repos[j], name(r, j)))
		}
		if r == 0 {
			// Each repository's first window, started after its first change: it ends quiet.
			for range repos {
				timers = append(timers, rig.nextWindow(t, "no window ended yet"))
			}
		}
		if r == rounds-1 {
			break
		}
		// The window the change arrived in ends (round 0: quiet); the announcements of the next
		// rounds start another one.
		timers = rig.endWindows(t, timers, fmt.Sprintf("round %d: changes of later rounds are announced", r))
		if r > 0 {
			// A window with no change in it ends: quiet, still held.
			timers = rig.endWindows(t, timers, fmt.Sprintf("quiet window after round %d: changes of later rounds are announced", r))
		}
	}
	// Every change is submitted: the window the last one arrived in is the sixth, beyond
	// maxWindowsPerBatch, and its end ends each batch.
	g.Expect(len(timers)).To(Equal(repos))
	for _, timer := range timers {
		timer <- time.Time{}
	}
	for range repos {
		rig.awaitPush(t, "every announced change was submitted")
	}
	for _, p := range all {
		<-p.Done()
		_, err := p.Result()
		g.Expect(err).NotTo(HaveOccurred())
	}

	g.Expect(rig.pushes.Load()).To(BeEquivalentTo(repos))
	for j := range repos {
		rem := readRemote(t, rig.repos[j], nil)
		g.Expect(rem.commitCount(t)).To(Equal(1))
		g.Expect(rem.files(t)).To(HaveLen(rounds))
	}
	g.Expect(rig.win.started).To(BeEmpty())
	g.Expect(rig.w.announced()).To(BeZero(), "every announcement was settled by its Submit")
}

// An announcement withdrawn with Unexpect (the app's pass ended without a change) no longer
// holds the batch: the next quiet window ends it, and nothing is kept for the app.
func TestUnexpectReleasesTheBatch(t *testing.T) {
	g := NewWithT(t)
	rig := newExpectRig(t, 1)
	repo := rig.repos[0]
	rig.w.Expect(repo, "ns/a")
	rig.w.Expect(repo, "ns/b")

	a := rig.submit(t, repo, "a")
	rig.nextWindow(t, "no window ended yet") <- time.Time{}
	// The window was quiet, but b is announced: another window, nothing pushed.
	second := rig.nextWindow(t, "b is announced")
	rig.w.Unexpect("ns/b")
	second <- time.Time{}
	rig.awaitPush(t, "b's announcement was withdrawn")

	<-a.Done()
	_, err := a.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rig.pushes.Load()).To(BeEquivalentTo(1))
	g.Expect(rig.win.started).To(BeEmpty())
	g.Expect(rig.w.announced()).To(BeZero())
}

// Submitting an app's change settles its announcement: it does not hold the batch that holds the
// change, and nothing is kept for the app.
func TestSubmitSettlesTheAnnouncement(t *testing.T) {
	g := NewWithT(t)
	rig := newExpectRig(t, 1)
	repo := rig.repos[0]
	rig.w.Expect(repo, "ns/a")

	a := rig.submit(t, repo, "a")
	g.Expect(rig.w.announced()).To(BeZero())
	rig.nextWindow(t, "no window ended yet") <- time.Time{}
	rig.awaitPush(t, "a's announcement was settled by its Submit")
	<-a.Done()
	_, err := a.Result()
	g.Expect(err).NotTo(HaveOccurred())
}

// An announced change that never comes holds a batch at most maxExpectedWindows windows.
func TestAnnouncementsHoldABatchAtMostTheirBound(t *testing.T) {
	g := NewWithT(t)
	rig := newExpectRig(t, 1)
	repo := rig.repos[0]
	rig.w.Expect(repo, "ns/never")

	a := rig.submit(t, repo, "a")
	for i := range maxExpectedWindows {
		rig.nextWindow(t, fmt.Sprintf("window %d of %d: ns/never is announced", i+1, maxExpectedWindows)) <- time.Time{}
	}
	rig.awaitPush(t, fmt.Sprintf("the batch waited %d windows", maxExpectedWindows))
	<-a.Done()
	_, err := a.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rig.pushes.Load()).To(BeEquivalentTo(1))
}

// An announcement older than maxExpectedWindows windows (its Unexpect was lost) holds nothing,
// and it is dropped, whatever its branch: an announcement can neither hold every later batch of
// its branch nor stay in memory.
func TestStaleAnnouncementsHoldNothingAndAreDropped(t *testing.T) {
	g := NewWithT(t)
	rig := newExpectRig(t, 2)
	rig.w.Expect(rig.repos[0], "ns/lost")
	rig.w.Expect(rig.repos[1], "ns/lost-elsewhere")
	rig.clock.advance(maxExpectedWindows*time.Hour + time.Second)
	rig.w.Expect(rig.repos[1], "ns/fresh")

	a := rig.submit(t, rig.repos[0], "a")
	rig.nextWindow(t, "no window ended yet") <- time.Time{}
	rig.awaitPush(t, "the only announcement for the branch is stale")
	<-a.Done()
	_, err := a.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rig.w.announced()).To(Equal(1), "the stale announcements of both branches are dropped, the fresh one is kept")
	rig.w.Unexpect("ns/fresh")
	g.Expect(rig.w.announced()).To(BeZero())
}

// Without a batching window there is nothing to hold: Expect keeps nothing.
func TestExpectWithoutAWindowKeepsNothing(t *testing.T) {
	w := newTestWriter(t)
	w.Expect(testRepo(newServer(t)), "ns/a")
	NewWithT(t).Expect(w.announced()).To(BeZero())
}
