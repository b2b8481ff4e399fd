package gitops

import (
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
	// One window, measured from the oldest change: never longer than the window itself.
	timers := gate.timers()
	g.Expect(timers).To(HaveLen(1))
	g.Expect(timers[0]).To(And(BeNumerically(">", 0), BeNumerically("<=", time.Hour)))
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
