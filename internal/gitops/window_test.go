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

// windowGate replaces the batching window's timer: every timer the Writer starts fires only
// when the test opens the gate, so the test decides when the window ends (no timing).
type windowGate struct {
	mu     sync.Mutex
	waits  []time.Duration
	open   chan struct{}
	queued atomic.Int32
	// atQueued opens the gate once that many changes are queued (0: never by itself).
	atQueued int32
	pushes   atomic.Int32
}

func newWindowGate(atQueued int32) *windowGate {
	return &windowGate{open: make(chan struct{}), atQueued: atQueued}
}

func (g *windowGate) options(window time.Duration) []Option {
	return []Option{
		WithBatchWindow(window),
		func(o *options) {
			o.after = func(d time.Duration) <-chan time.Time {
				g.mu.Lock()
				g.waits = append(g.waits, d)
				g.mu.Unlock()
				ch := make(chan time.Time, 1)
				go func() {
					<-g.open
					ch <- time.Time{}
				}()
				return ch
			}
			o.onQueued = func() {
				if g.queued.Add(1) == g.atQueued {
					close(g.open)
				}
			}
		},
		WithBeforePush(func() { g.pushes.Add(1) }),
	}
}

func (g *windowGate) timers() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]time.Duration(nil), g.waits...)
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("app%02d", i)
	}
	return out
}

// The window holds the first change until the gate opens (the window "ended" after every
// change was queued): all of them share one commit and one push. Without the window the first
// change would have been pushed alone the moment it was queued.
func TestBatchWindowGroupsChangesArrivingOneByOne(t *testing.T) {
	g := NewWithT(t)
	const apps = 12
	repo := testRepo(newServer(t))
	gate := newWindowGate(apps)
	w := newTestWriter(t, gate.options(time.Hour)...)

	results, errs := applyConcurrently(w, repo, names(apps))

	g.Expect(errs).To(HaveEach(Not(HaveOccurred())))
	rem := readRemote(t, repo, nil)
	g.Expect(rem.files(t)).To(HaveLen(apps))
	g.Expect(rem.commitCount(t)).To(Equal(1))
	g.Expect(gate.pushes.Load()).To(BeEquivalentTo(1))
	for i := range results {
		g.Expect(results[i].Commit).To(Equal(results[0].Commit))
		g.Expect(results[i].Changed).To(BeTrue())
	}
	// One window, extended once if changes arrived during it (the second one, with the gate
	// open, is quiet): each timer is one whole window.
	timers := gate.timers()
	g.Expect(len(timers)).To(And(BeNumerically(">=", 1), BeNumerically("<=", 2)))
	g.Expect(timers).To(HaveEach(time.Hour))
}

// steppedWindow replaces the window's timer with one the test fires: each timer the Writer
// starts is announced on started and fires when the test sends on it.
type steppedWindow struct {
	started chan chan time.Time
}

func (s *steppedWindow) option() Option {
	return func(o *options) {
		o.after = func(time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			s.started <- ch
			return ch
		}
	}
}

// newSteppedWriter is a Writer with an hour-long window whose timers the test fires, the
// repository it writes and its push count.
func newSteppedWriter(t *testing.T) (*Writer, Repo, *steppedWindow, *atomic.Int32) {
	repo := testRepo(newServer(t))
	win := &steppedWindow{started: make(chan chan time.Time, maxWindowsPerBatch+1)}
	pushes := &atomic.Int32{}
	w := newTestWriter(t, WithBatchWindow(time.Hour), win.option(), WithBeforePush(func() { pushes.Add(1) }))
	return w, repo, win, pushes
}

// A change arriving during the window extends it by another window; a quiet window ends the
// wait, and the two changes share one commit and one push.
func TestBatchWindowIsExtendedWhileChangesArrive(t *testing.T) {
	g := NewWithT(t)
	w, repo, win, pushes := newSteppedWriter(t)

	a, err := w.Submit(context.Background(), repo, appChange("a", map[string]string{"deployment.yaml": "a"}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	first := <-win.started
	b, err := w.Submit(context.Background(), repo, appChange("b", map[string]string{"deployment.yaml": "b"}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	first <- time.Time{}
	// b arrived during the first window: a second one is started, and nothing is pushed yet.
	second := <-win.started
	g.Expect(pushes.Load()).To(BeZero())
	second <- time.Time{}

	for _, p := range []*Pending{a, b} {
		<-p.Done()
		_, err := p.Result()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(pushes.Load()).To(BeEquivalentTo(1))
	g.Expect(readRemote(t, repo, nil).commitCount(t)).To(Equal(1))
	g.Expect(win.started).To(BeEmpty())
}

// However steadily changes arrive, a batch waits at most maxWindowsPerBatch windows: a change
// queued in each window does not hold the first one back any longer.
func TestBatchWindowIsCapped(t *testing.T) {
	g := NewWithT(t)
	w, repo, win, pushes := newSteppedWriter(t)

	var all []*Pending
	submit := func(name string) {
		p, err := w.Submit(context.Background(), repo, appChange(name, map[string]string{"deployment.yaml": name}), nil)
		g.Expect(err).NotTo(HaveOccurred())
		all = append(all, p)
	}
	submit("app00")
	for i := 1; i <= maxWindowsPerBatch; i++ {
		timer := <-win.started
		submit(fmt.Sprintf("app%02d", i))
		timer <- time.Time{}
	}
	select {
	case <-all[0].Done():
	case <-win.started:
		t.Fatalf("a window beyond the %d allowed was started", maxWindowsPerBatch)
	}
	for _, p := range all {
		<-p.Done()
	}
	// Every change arrived before the last window ended: one batch, one push, no sixth window.
	g.Expect(pushes.Load()).To(BeEquivalentTo(1))
	rem := readRemote(t, repo, nil)
	g.Expect(rem.commitCount(t)).To(Equal(1))
	g.Expect(rem.files(t)).To(HaveLen(maxWindowsPerBatch + 1))
	g.Expect(win.started).To(BeEmpty())
}

// A full batch does not wait for the window: with a gate that never opens, maxBatch changes
// are written as soon as they are queued, and so is the next full batch.
func TestBatchWindowEndsEarlyWhenTheBatchIsFull(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	gate := newWindowGate(0)
	w := newTestWriter(t, append(gate.options(time.Hour), WithMaxBatch(4))...)

	_, errs := applyConcurrently(w, repo, names(8))

	g.Expect(errs).To(HaveEach(Not(HaveOccurred())))
	rem := readRemote(t, repo, nil)
	g.Expect(rem.files(t)).To(HaveLen(8))
	// Each batch was cut by its size: 4 + 4, or an earlier partial batch woken by a later full
	// one is impossible because the gate never opens.
	g.Expect(rem.commitCount(t)).To(Equal(2))
	g.Expect(gate.pushes.Load()).To(BeEquivalentTo(2))
}

// Without a window (the Writer's default) no timer is started: the first change is written
// the moment it is queued.
func TestNoBatchWindowStartsNoTimer(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	gate := newWindowGate(0)
	w := newTestWriter(t, gate.options(0)...)

	apply(t, w, repo, appChange("a", map[string]string{"deployment.yaml": "name: a"}))
	apply(t, w, repo, appChange("b", map[string]string{"deployment.yaml": "name: b"}))

	g.Expect(gate.timers()).To(BeEmpty())
	g.Expect(readRemote(t, repo, nil).commitCount(t)).To(Equal(2))
}
