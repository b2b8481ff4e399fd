package gitops

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// packInspector counts what the objects of a pack inflate to while the pack arrives, and refuses
// the pack once they inflate to more than its budget. It runs a pack scanner on its own goroutine,
// fed through a pipe: inspect passes it the next bytes of the pack, finish waits for its verdict.
// An object is inflated into a counter, never into memory, and counting stops at the byte that
// crosses the budget, so a small pack of a huge file costs the budget's worth of inflating, not
// the file's.
type packInspector struct {
	pw   *io.PipeWriter
	fed  bool
	done chan struct{}
	// err is the verdict, set before done is closed.
	err error
}

func newPackInspector(budget int64) *packInspector {
	pr, pw := io.Pipe()
	i := &packInspector{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(i.done)
		i.err = inflatedWithin(pr, budget)
		if i.err != nil {
			// The next inspect returns the verdict.
			_ = pr.CloseWithError(i.err)
			return
		}
		// Bytes after the pack's checksum have nothing to count; keep the writer from blocking.
		_, _ = io.Copy(io.Discard, pr)
	}()
	return i
}

// inspect passes the next bytes of the pack to the scanner; it fails once the pack was refused.
func (i *packInspector) inspect(p []byte) error {
	i.fed = true
	_, err := i.pw.Write(p)
	return err
}

// finish ends the pack and returns the verdict: nil when it was empty or its objects inflate to
// no more than the budget.
func (i *packInspector) finish() error {
	_ = i.pw.Close()
	<-i.done
	if !i.fed {
		return nil
	}
	return i.err
}

// inflatedWithin reads the pack from r and fails with ErrRepositoryTooLarge as soon as its objects
// inflate to more than budget bytes. A whole object counts its inflated bytes; a delta counts the
// size of the object it produces, which its first bytes declare (so a small delta that would
// produce a huge object is refused before go-git applies it).
func inflatedWithin(r io.Reader, budget int64) error {
	s := packfile.NewScanner(r)
	_, count, err := s.Header()
	if err != nil {
		return fmt.Errorf("inspect fetched pack: %w", err)
	}
	var total int64
	for range count {
		h, err := s.NextObjectHeader()
		if err != nil {
			return fmt.Errorf("inspect fetched pack: %w", err)
		}
		c := &inflateCounter{left: budget - total, delta: h.Type.IsDelta()}
		if _, _, err := s.NextObject(c); err != nil {
			if errors.Is(err, ErrRepositoryTooLarge) {
				return err
			}
			return fmt.Errorf("inspect fetched pack: %w", err)
		}
		total += c.counted
	}
	if _, err := s.Checksum(); err != nil {
		return fmt.Errorf("inspect fetched pack: %w", err)
	}
	return nil
}

// inflateCounter receives one inflated object and counts its size against left: the bytes
// written for a whole object, the declared result size for a delta.
type inflateCounter struct {
	left    int64
	delta   bool
	counted int64
	// header collects a delta's first bytes until its two sizes (base, result) are read.
	header []byte
	sized  bool
}

// maxDeltaHeader is the most bytes a delta's two size varints take.
const maxDeltaHeader = 20

func (c *inflateCounter) Write(p []byte) (int, error) {
	if !c.delta {
		c.counted += int64(len(p))
		return len(p), c.check()
	}
	if !c.sized {
		c.header = append(c.header, p[:min(len(p), maxDeltaHeader-len(c.header))]...)
		if _, rest, ok := deltaSize(c.header); ok {
			if result, _, ok := deltaSize(rest); ok {
				c.sized, c.counted = true, int64(min(result, math.MaxInt64))
				return len(p), c.check()
			}
		}
		if len(c.header) >= maxDeltaHeader {
			return 0, errors.New("malformed delta header")
		}
	}
	return len(p), nil
}

func (c *inflateCounter) check() error {
	if c.counted > c.left {
		return fmt.Errorf("%w: the fetched objects inflate to more than the limit (%d bytes left, an object needs more)",
			ErrRepositoryTooLarge, max(c.left, 0))
	}
	return nil
}

// deltaSize decodes one size of a delta's header (little-endian base 128) from b and returns the
// bytes after it; ok is false when b ends before the size does.
func deltaSize(b []byte) (size uint64, rest []byte, ok bool) {
	var shift uint
	for i, x := range b {
		if shift > 63 {
			return 0, nil, false
		}
		size |= uint64(x&0x7f) << shift
		if x&0x80 == 0 {
			return size, b[i+1:], true
		}
		shift += 7
	}
	return 0, nil, false
}
