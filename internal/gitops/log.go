package gitops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// LogEntry is one commit of a branch as Log reads it: its hash, when it was committed and the
// trailer lines that end its message.
type LogEntry struct {
	Commit   string
	When     time.Time
	Trailers []string
}

// maxLogEntries bounds the per-branch cache of Log's entries; a full cache is emptied and
// filled again (commits never change, so an entry never goes stale).
const maxLogEntries = 4096

// Log reads the branch's last RevisionFetchDepth commits, newest first along first parents,
// with the trailers of each (a batched commit holds every change's; Change.Trailers). It
// fetches the branch's recent history once per call (within WithMaxRepositorySize; no more than
// a negotiation when the clone has it) and reads each commit's message once: the entries are
// cached per commit. The walk ends at the shallow boundary, at a root commit or after
// RevisionFetchDepth commits. A branch that does not exist has no entries. While a batch (or
// another lookup) of the branch holds its clone it does not wait: it fails with a *BusyError
// (ErrBranchBusy).
func (w *Writer) Log(ctx context.Context, repo Repo) ([]LogEntry, error) {
	if err := repo.validate(); err != nil {
		return nil, err
	}
	st := w.state(repo)
	defer w.unref(st)
	if err := st.lookupLock(); err != nil {
		return nil, err
	}
	defer st.work.Unlock()
	clone, err := w.open(st)
	if err != nil {
		return nil, err
	}
	if err := w.fetchHistory(ctx, st, clone, repo.Auth); err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) || errors.Is(err, git.NoMatchingRefSpecError{}) {
			return nil, nil // no such branch: no history
		}
		return nil, err
	}
	ref, err := clone.Reference(plumbing.NewRemoteReferenceName(remoteName, st.branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read fetched branch %s: %w", st.branch, err)
	}
	var out []LogEntry
	for h := ref.Hash(); len(out) < RevisionFetchDepth; {
		e, parent, ok := st.revisions.logEntry(h)
		if !ok {
			c, err := clone.CommitObject(h)
			if errors.Is(err, plumbing.ErrObjectNotFound) {
				break // the shallow boundary
			}
			if err != nil {
				return nil, fmt.Errorf("read commit %s: %w", h, err)
			}
			e = LogEntry{Commit: h.String(), When: c.Committer.When, Trailers: trailerLines(c.Message)}
			if len(c.ParentHashes) > 0 {
				parent = c.ParentHashes[0]
			}
			st.revisions.putLogEntry(h, e, parent)
		}
		out = append(out, e)
		if parent.IsZero() {
			break
		}
		h = parent
	}
	return out, nil
}

// trailerLines are the lines of the last paragraph of message that are Git trailer lines
// (validTrailer), or none when a line of it is not one (the paragraph is text, not trailers).
func trailerLines(message string) []string {
	message = strings.TrimRight(message, "\n")
	i := strings.LastIndex(message, "\n\n")
	if i < 0 {
		return nil
	}
	lines := strings.Split(message[i+2:], "\n")
	for _, l := range lines {
		if !validTrailer(l) {
			return nil
		}
	}
	return lines
}

// logEntry is the cached entry of commit h and its first parent.
func (c *revisionCache) logEntry(h plumbing.Hash) (LogEntry, plumbing.Hash, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.log[h]
	return e.entry, e.parent, ok
}

func (c *revisionCache) putLogEntry(h plumbing.Hash, e LogEntry, parent plumbing.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log == nil || len(c.log) >= maxLogEntries {
		c.log = map[plumbing.Hash]cachedLogEntry{}
	}
	c.log[h] = cachedLogEntry{entry: e, parent: parent}
}

// cachedLogEntry is a commit as Log read it, with its first parent (zero: none).
type cachedLogEntry struct {
	entry  LogEntry
	parent plumbing.Hash
}
