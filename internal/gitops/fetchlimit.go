package gitops

import (
	"fmt"
	"io"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// fetchRemote returns the clone's remote, fetching into a storage that stops
// a pack at budget bytes (negative: no bound).
//
// The bound is enforced while the pack arrives, not after it was stored: go-git
// streams a fetched pack into the storage's PackfileWriter, and the one
// wrapped here fails the write that would exceed the budget. The fetch then
// returns that error, closes the transport's stream (for HTTP the response
// body, so the connection is dropped rather than drained) and the caller
// deletes the clone. What crossed the network is therefore the budget plus
// what the transport and the kernel buffered ahead of the reader, whatever
// the repository's size. The wrapping sits on the storage rather than on an
// HTTP client so that it holds for every transport (HTTPS and SSH) without
// replacing go-git's process-wide protocol table.
func fetchRemote(repo *git.Repository, budget int64) (*git.Remote, error) {
	remote, err := repo.Remote(remoteName)
	if err != nil {
		return nil, fmt.Errorf("open remote: %w", err)
	}
	if budget < 0 {
		return remote, nil
	}
	fsStorage, ok := repo.Storer.(*filesystem.Storage)
	if !ok {
		// Clones are always opened from disk (PlainOpen, PlainInit).
		return nil, fmt.Errorf("%w: the clone is not stored on disk (%T)", errStaleClone, repo.Storer)
	}
	return git.NewRemote(&limitedStorage{Storage: fsStorage, budget: budget}, remote.Config()), nil
}

// limitedStorage is the clone's storage whose pack writer accepts at most
// budget bytes. Every other method is the clone's own.
type limitedStorage struct {
	*filesystem.Storage
	budget int64
}

// PackfileWriter implements storer.PackfileWriter.
func (s *limitedStorage) PackfileWriter() (io.WriteCloser, error) {
	w, err := s.Storage.PackfileWriter()
	if err != nil {
		return nil, err
	}
	return &limitedWriter{w: w, left: s.budget}, nil
}

// limitedWriter passes at most left bytes to w; the write that would pass
// more fails with ErrRepositoryTooLarge and nothing of it reaches w, which
// then discards the partial pack when closed.
type limitedWriter struct {
	w       io.WriteCloser
	left    int64
	written int64
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("%w: the fetched pack exceeds %d bytes", ErrRepositoryTooLarge, l.written+l.left)
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	l.written += int64(n)
	return n, err
}

func (l *limitedWriter) Close() error { return l.w.Close() }
