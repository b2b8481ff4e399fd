package gitops

import (
	"fmt"
	"io"
	"math"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// fetchLimits bound one fetch: the pack bytes it brings and what its objects inflate to
// (negative: no bound).
type fetchLimits struct {
	pack, inflated int64
}

// fetchRemote returns the clone's remote, fetching into a storage that stops a pack at
// limits.pack bytes and at objects inflating to more than limits.inflated bytes.
//
// The bounds are enforced while the pack arrives, not after it was stored: go-git streams a
// fetched pack into the storage's PackfileWriter, and the one wrapped here fails the write that
// would exceed a bound. The fetch then returns that error, closes the transport's stream (for
// HTTP the response body, so the connection is dropped rather than drained) and the caller
// deletes the clone. What crossed the network is therefore the budget plus what the transport
// and the kernel buffered ahead of the reader, whatever the repository's size. The wrapping sits
// on the storage rather than on an HTTP client so that it holds for every transport (HTTPS and
// SSH) without replacing go-git's process-wide protocol table.
//
// The inflated size matters because a pack is small when its objects compress well (a file of
// zeros shrinks a thousandfold), while go-git, once the pack is complete, indexes it by reading
// every object whole into memory. So the pack also streams through packInspector, which inflates
// each object into a counter as it arrives and fails the write once the count passes the bound;
// the pack's last bytes are held back until the inspector has seen all of it, so go-git never
// gets a complete pack to index that is over the bound.
func fetchRemote(repo *git.Repository, limits fetchLimits) (*git.Remote, error) {
	remote, err := repo.Remote(remoteName)
	if err != nil {
		return nil, fmt.Errorf("open remote: %w", err)
	}
	if limits.pack < 0 && limits.inflated < 0 {
		return remote, nil
	}
	fsStorage, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		// Clones are always opened from disk (openClone).
		return nil, fmt.Errorf("%w: the clone is not stored on disk (%T)", errStaleClone, repo.Storer)
	}
	return git.NewRemote(&limitedStorage{Storage: fsStorage, limits: limits}, remote.Config()), nil
}

// limitedStorage is the clone's storage whose pack writer enforces limits. Every other method is
// the clone's own.
type limitedStorage struct {
	*filesystem.Storage
	limits fetchLimits
}

// PackfileWriter implements storer.PackfileWriter.
func (s *limitedStorage) PackfileWriter() (io.WriteCloser, error) {
	w, err := s.Storage.PackfileWriter()
	if err != nil {
		return nil, err
	}
	left := s.limits.pack
	if left < 0 {
		left = math.MaxInt64
	}
	lw := &limitedWriter{w: w, left: left}
	if s.limits.inflated >= 0 {
		lw.inspector = newPackInspector(s.limits.inflated)
	}
	return lw, nil
}

// heldBack is how many bytes at the end of the pack limitedWriter keeps from go-git until the
// inspector has seen the whole pack: more than the pack's trailing checksum, so the pack go-git
// has is incomplete (and is never indexed) until the inspector accepted it.
const heldBack = 64

// limitedWriter passes at most left bytes to w; the write that would pass
// more fails with ErrRepositoryTooLarge and nothing of it reaches w, which
// then discards the partial pack when closed. With an inspector, every byte goes to the
// inspector first, and the last heldBack bytes reach w only when the inspector accepted the whole
// pack.
type limitedWriter struct {
	w       io.WriteCloser
	left    int64
	written int64

	inspector *packInspector
	held      []byte
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("%w: the fetched pack exceeds %d bytes", ErrRepositoryTooLarge, l.written+l.left)
	}
	if l.inspector == nil {
		n, err := l.w.Write(p)
		l.left -= int64(n)
		l.written += int64(n)
		return n, err
	}
	if err := l.inspector.inspect(p); err != nil {
		return 0, err
	}
	l.left -= int64(len(p))
	l.written += int64(len(p))
	l.held = append(l.held, p...)
	if pass := len(l.held) - heldBack; pass > 0 {
		if _, err := l.w.Write(l.held[:pass]); err != nil {
			return 0, err
		}
		l.held = append(l.held[:0], l.held[pass:]...)
	}
	return len(p), nil
}

// Close completes the pack for w once the inspector accepted it, and closes w. A pack the
// inspector refused stays incomplete: w discards it, and Close returns the inspector's error.
func (l *limitedWriter) Close() error {
	if l.inspector != nil {
		err := l.inspector.finish()
		if err == nil && len(l.held) > 0 {
			_, err = l.w.Write(l.held)
		}
		if err != nil {
			_ = l.w.Close()
			return err
		}
	}
	return l.w.Close()
}
