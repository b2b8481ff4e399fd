package gitops

import (
	"errors"
	"fmt"
	"sync"
)

// cloneLock is held while a branch's clone is in use: by a batch (fetch, commit, push), by a
// lookup (SameFolder, Log: a read, at most one bounded history fetch), by Forget and by the
// deletion of an idle clone. Batches and the Writer's own housekeeping wait for it (Lock); a
// lookup made on a caller's behalf never does (tryLock): a batch holds the clone across its
// network I/O for up to WithTimeout, and a caller that waited for it would be blocked by other
// callers' pushes to a slow server. tryLock tells such a caller when to ask again instead.
type cloneLock struct {
	mu   sync.Mutex
	held bool
	// freed is closed when the holder unlocks (made by the lock that took it).
	freed chan struct{}
}

// Lock waits until the clone is free and takes it.
func (l *cloneLock) Lock() {
	for {
		ok, freed := l.tryLock()
		if ok {
			return
		}
		<-freed
	}
}

// TryLock takes the clone if it is free and reports whether it did.
func (l *cloneLock) TryLock() bool {
	ok, _ := l.tryLock()
	return ok
}

// tryLock takes the clone if it is free (true), or returns a channel that is closed when its
// holder frees it.
func (l *cloneLock) tryLock() (bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		return false, l.freed
	}
	l.held = true
	l.freed = make(chan struct{})
	return true, nil
}

// Unlock frees the clone and wakes whoever waits for it.
func (l *cloneLock) Unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		panic("gitops: unlock of a free clone lock")
	}
	l.held = false
	close(l.freed)
}

// ErrBranchBusy means a lookup (SameFolder, Log) needed the branch's clone while a batch or
// another lookup of the branch held it. Nothing was read; the error is a *BusyError, whose
// Freed says when to ask again.
var ErrBranchBusy = errors.New("branch busy")

// BusyError is the ErrBranchBusy of one lookup.
type BusyError struct {
	// Branch and URL (without credentials) name the busy branch.
	Branch, URL string
	// Freed is closed when the clone is free again (the batch or lookup holding it ended).
	Freed <-chan struct{}
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("branch %s of %s is being written: %s", e.Branch, e.URL, ErrBranchBusy)
}

// Is makes a *BusyError match ErrBranchBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBranchBusy }

// lookupLock takes st's clone for a lookup, or returns a *BusyError when it is held.
func (st *repoState) lookupLock() error {
	if ok, freed := st.work.tryLock(); !ok {
		return &BusyError{Branch: st.branch, URL: redactURL(st.url), Freed: freed}
	}
	return nil
}
