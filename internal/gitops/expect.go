package gitops

import "time"

// maxExpectedWindows bounds how long announced changes hold a batch: a batch waits at most this
// many windows (10 s with the default 200 ms window) for changes announced with Expect, and an
// announcement older than that many windows holds nothing and is dropped.
const maxExpectedWindows = 50

// expectation is a change announced for a branch (Expect) that has not been submitted yet.
type expectation struct {
	state string // the branch's clone name (cloneDirName)
	at    time.Time
}

// Expect announces that a change of app (Change.AppKey) to repo's branch is coming: the caller
// has started working on it and will Submit it soon, or call Unexpect. While a branch has
// announced changes, its batching window is extended (up to maxExpectedWindows windows) even
// when a window passes without an arrival, so that a burst of apps reconciled at once, whose
// changes to one branch arrive further apart than a window, still shares a push. Submitting a
// change of app settles the announcement; so does Unexpect. A caller must call Unexpect (or
// Submit) after every Expect: an announcement is kept until then, and only dropped once it is
// older than the bound (as a defence, when the next batch of any branch waits out a window).
// Without a batching window it records nothing.
func (w *Writer) Expect(repo Repo, app string) {
	if w.opts.onExpect != nil {
		w.opts.onExpect(app, repo)
	}
	if w.opts.batchWindow <= 0 || repo.URL == "" || app == "" {
		return
	}
	w.expectMu.Lock()
	defer w.expectMu.Unlock()
	if w.expected == nil {
		w.expected = map[string]expectation{}
	}
	w.expected[app] = expectation{state: cloneDirName(repo.URL, repo.branch()), at: w.opts.clock.Now()}
}

// Unexpect withdraws app's announcement: its change is not coming (the pass ended without one),
// or it was submitted.
func (w *Writer) Unexpect(app string) {
	if w.opts.onUnexpect != nil {
		w.opts.onUnexpect(app)
	}
	w.expectMu.Lock()
	defer w.expectMu.Unlock()
	delete(w.expected, app)
}

// expecting reports whether a change to st's branch is announced and not yet submitted. Stale
// announcements (older than maxExpectedWindows windows, by the Writer's clock) of every branch
// are dropped.
func (w *Writer) expecting(st *repoState) bool {
	name := cloneDirName(st.url, st.branch)
	stale := w.opts.clock.Now().Add(-maxExpectedWindows * w.opts.batchWindow)
	w.expectMu.Lock()
	defer w.expectMu.Unlock()
	found := false
	for app, e := range w.expected {
		switch {
		case e.at.Before(stale):
			delete(w.expected, app)
		case e.state == name:
			found = true
		}
	}
	return found
}

// announced is the number of announcements kept (tests).
func (w *Writer) announced() int {
	w.expectMu.Lock()
	defer w.expectMu.Unlock()
	return len(w.expected)
}
