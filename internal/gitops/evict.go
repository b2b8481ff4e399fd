package gitops

import (
	"cmp"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-logr/logr"
)

// evictIdleClones keeps the clones on disk within WithMaxCacheSize: while they hold more, it
// deletes the clone directories no state uses (an earlier process's), then the clones of idle
// branches, least recently used first. A branch is idle when nothing is queued for it, no batch
// runs (its drain goroutine has ended), no caller holds it and its clone is not in use; a busy
// branch is never touched, so the cache may stay over the bound until one becomes idle. The
// branch's state stays: its next change fetches the branch again.
func (w *Writer) evictIdleClones(ctx context.Context) {
	if w.opts.maxCacheSize <= 0 {
		return
	}
	log := logr.FromContextOrDiscard(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scanOrphans()
	total := int64(0)
	for _, size := range w.orphans {
		total += size
	}
	states := make([]*repoState, 0, len(w.repos))
	for _, st := range w.repos {
		total += st.diskBytes.Load()
		states = append(states, st)
	}
	if total <= w.opts.maxCacheSize {
		return
	}
	for name, size := range w.orphans {
		if err := os.RemoveAll(filepath.Join(w.cacheDir, name)); err != nil {
			log.Error(err, "Cannot evict a Git clone left by an earlier process")
			continue
		}
		delete(w.orphans, name)
		total -= size
		log.Info("Evicted a Git clone left by an earlier process", "bytes", size)
		if total <= w.opts.maxCacheSize {
			return
		}
	}
	slices.SortFunc(states, func(a, b *repoState) int { return cmp.Compare(a.lastUsed.Load(), b.lastUsed.Load()) })
	for _, st := range states {
		size := st.diskBytes.Load()
		if size == 0 || st.refs > 0 || !st.evict() {
			continue
		}
		total -= size
		log.Info("Evicted an idle Git clone: the cache is over its size limit",
			"repository", redactURL(st.url), "branch", st.branch, "bytes", size, "limit", w.opts.maxCacheSize)
		if total <= w.opts.maxCacheSize {
			return
		}
	}
}

// evict deletes the clone of an idle branch and reports whether it did. The caller holds
// Writer.mu, so no caller can take the state meanwhile.
func (st *repoState) evict() bool {
	st.mu.Lock()
	busy := st.running || len(st.pending) > 0
	st.mu.Unlock()
	if busy || !st.work.TryLock() {
		return false
	}
	defer st.work.Unlock()
	if err := os.RemoveAll(st.dir); err != nil {
		return false
	}
	st.diskBytes.Store(0)
	return true
}

// scanOrphans records, once, the clone directories of the cache no state uses and their sizes.
// The caller holds Writer.mu.
func (w *Writer) scanOrphans() {
	if w.orphansScanned {
		return
	}
	w.orphansScanned = true
	w.orphans = map[string]int64{}
	entries, err := os.ReadDir(w.cacheDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if _, used := w.repos[e.Name()]; used || !e.IsDir() {
			continue
		}
		w.orphans[e.Name()] = dirSize(filepath.Join(w.cacheDir, e.Name()))
	}
}

// dirSize is the size of the files under dir in bytes (what it can read).
func dirSize(dir string) int64 {
	var size int64
	// An entry that cannot be read counts as nothing: the size only orders evictions.
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, infoErr := d.Info(); infoErr == nil {
				size += info.Size()
			}
		}
		return nil
	})
	return size
}
