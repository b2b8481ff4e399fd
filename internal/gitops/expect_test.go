package gitops

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// newSteppedWriterRepos is newSteppedWriter with n repositories on one server.
func newSteppedWriterRepos(t *testing.T, n int) (*Writer, []Repo, *steppedWindow, *atomic.Int32) {
	srv := newServer(t)
	repos := make([]Repo, n)
	for i := range repos {
		repos[i] = Repo{URL: fmt.Sprintf("%s/org/apps-%d.git", srv.HTTPAddress(), i), Branch: testBranch}
	}
	win := &steppedWindow{started: make(chan chan time.Time, 4*n)}
	pushes := &atomic.Int32{}
	w := newTestWriter(t, WithBatchWindow(time.Hour), win.option(), WithBeforePush(func() { pushes.Add(1) }))
	return w, repos, win, pushes
}

// A burst of apps reconciled at once over several repositories: every app is announced first
// (Expect), then each repository receives one change per window, every window quiet when it ends
// (the next change comes after it), as when 200 apps over 20 repositories are reconciled by 16
// workers. The announced changes hold each repository's batch until the last one is submitted:
// one push per repository. Without the announcements every quiet window ended a batch: one push
// per change (9 here).
func TestAnnouncedChangesShareOnePushPerRepository(t *testing.T) {
	g := NewWithT(t)
	const repos, rounds = 3, 3
	w, repo, win, pushes := newSteppedWriterRepos(t, repos)
	name := func(r, j int) string { return fmt.Sprintf("app-%d-%d", r, j) }
	for r := range rounds {
		for j := range repos {
			w.Expect(repo[j], "ns/"+name(r, j))
		}
	}

	var all []*Pending
	for r := range rounds {
		for j := range repos {
			p, err := w.Submit(context.Background(), repo[j], appChange(name(r, j), map[string]string{"deployment.yaml": name(r, j)}), nil)
			g.Expect(err).NotTo(HaveOccurred())
			all = append(all, p)
		}
		// Each repository's queue waits in one window (its first, or the one that follows a
		// window the announcements extended, or the first of a new batch); the window ends
		// before the next round's change: it was quiet.
		for range repos {
			(<-win.started) <- time.Time{}
		}
	}
	// Every change is submitted: the remaining windows end the batches.
	for _, p := range all {
		for done := false; !done; {
			select {
			case <-p.Done():
				done = true
			case timer := <-win.started:
				timer <- time.Time{}
			}
		}
		_, err := p.Result()
		g.Expect(err).NotTo(HaveOccurred())
	}

	g.Expect(pushes.Load()).To(BeEquivalentTo(repos))
	for j := range repos {
		rem := readRemote(t, repo[j], nil)
		g.Expect(rem.commitCount(t)).To(Equal(1))
		g.Expect(rem.files(t)).To(HaveLen(rounds))
	}
}

// An announcement withdrawn with Unexpect (the app's pass ended without a change) no longer
// holds the batch: the next quiet window ends it.
func TestUnexpectReleasesTheBatch(t *testing.T) {
	g := NewWithT(t)
	w, repo, win, pushes := newSteppedWriterRepos(t, 1)
	w.Expect(repo[0], "ns/a")
	w.Expect(repo[0], "ns/b")

	a, err := w.Submit(context.Background(), repo[0], appChange("a", map[string]string{"deployment.yaml": "a"}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	(<-win.started) <- time.Time{}
	// The window was quiet, but b is announced: another window, nothing pushed.
	var second chan time.Time
	select {
	case second = <-win.started:
	case <-a.Done():
		t.Fatal("a was pushed after a quiet window although b is announced")
	}
	g.Expect(pushes.Load()).To(BeZero())
	w.Unexpect("ns/b")
	second <- time.Time{}

	<-a.Done()
	_, err = a.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushes.Load()).To(BeEquivalentTo(1))
	g.Expect(win.started).To(BeEmpty())
}

// An announced change that never comes holds a batch at most maxExpectedWindows windows.
func TestAnnouncementsHoldABatchAtMostTheirBound(t *testing.T) {
	g := NewWithT(t)
	w, repo, win, pushes := newSteppedWriterRepos(t, 1)
	w.Expect(repo[0], "ns/never")

	a, err := w.Submit(context.Background(), repo[0], appChange("a", map[string]string{"deployment.yaml": "a"}), nil)
	g.Expect(err).NotTo(HaveOccurred())
	for range maxExpectedWindows {
		(<-win.started) <- time.Time{}
	}
	select {
	case <-a.Done():
	case <-win.started:
		t.Fatalf("a window beyond the %d allowed was started", maxExpectedWindows)
	}
	_, err = a.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pushes.Load()).To(BeEquivalentTo(1))
}
