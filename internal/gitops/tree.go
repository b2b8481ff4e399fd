package gitops

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// differsFrom reports whether applying c to a branch whose tree is base
// (nil: no branch yet) would change it. Comparing blob hashes against the
// tree writes no object when nothing changed, the common case
// for a periodic reconcile.
func differsFrom(base *object.Tree, c Change) (bool, error) {
	if base == nil {
		return !c.Delete, nil
	}
	folder, entry, err := lookup(base, c.Path)
	switch {
	case err != nil:
		return false, err
	case entry == nil:
		return !c.Delete, nil
	case c.Delete && c.only != nil && folder != nil:
		for _, name := range append([]string{OwnerFile}, c.only...) {
			if _, e, err := lookup(folder, name); err != nil || e != nil {
				return true, err
			}
		}
		return false, nil
	case c.Delete, folder == nil:
		return true, nil
	}
	seen := 0
	differs := false
	err = folder.Files().ForEach(func(f *object.File) error {
		seen++
		want, ok := c.Files[f.Name]
		if !ok || f.Mode != filemode.Regular || f.Hash != plumbing.ComputeHash(plumbing.BlobObject, want) {
			differs = true
			return storer.ErrStop
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return differs || seen != len(c.Files), nil
}

// lookup finds the entry at p in t, and its tree when it is a folder. The
// entry is nil when p does not exist, also when a parent is not a folder.
func lookup(t *object.Tree, p string) (*object.Tree, *object.TreeEntry, error) {
	segments := strings.Split(p, "/")
	for i, seg := range segments {
		entry, err := t.FindEntry(seg)
		if errors.Is(err, object.ErrEntryNotFound) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		last := i == len(segments)-1
		if entry.Mode != filemode.Dir {
			if last {
				return nil, entry, nil
			}
			return nil, nil, nil
		}
		if t, err = t.Tree(seg); err != nil {
			return nil, nil, err
		}
		if last {
			return t, entry, nil
		}
	}
	return nil, nil, nil
}

// unownedContent refuses to write folder p when the branch holds something there that no
// ownership marker of the owner claims (marked false): a README, .github/, a Flux bootstrap
// path, a folder a person wrote. A path that does not exist yet is free.
func unownedContent(base *object.Tree, p string, marked bool) error {
	if marked || base == nil {
		return nil
	}
	_, entry, err := lookup(base, p)
	switch {
	case err != nil:
		return err
	case entry == nil:
		return nil
	case entry.Mode != filemode.Dir:
		return fmt.Errorf("%w: %q is a file in the repository that no app wrote", ErrFolderNotOwned, p)
	default:
		return fmt.Errorf("%w: folder %q holds content without an ownership marker (%s): it was not written by an app and is not taken over",
			ErrFolderNotOwned, p, OwnerFile)
	}
}

// treeFilesSize adds up the sizes of the files of commit head's tree, read from the objects'
// headers (no blob is inflated), and fails with ErrRepositoryTooLarge as soon as they exceed limit
// (no limit when it is not positive). Submodule entries have no content here.
func treeFilesSize(repo *git.Repository, head plumbing.Hash, limit int64) (int64, error) {
	c, err := repo.CommitObject(head)
	if err != nil {
		return 0, fmt.Errorf("read head commit: %w", err)
	}
	tree, err := c.Tree()
	if err != nil {
		return 0, fmt.Errorf("read head tree: %w", err)
	}
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	var total int64
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return 0, fmt.Errorf("walk head tree: %w", err)
		}
		if !entry.Mode.IsFile() {
			continue
		}
		size, err := repo.Storer.EncodedObjectSize(entry.Hash)
		if err != nil {
			return 0, fmt.Errorf("read size of %s: %w", name, err)
		}
		total += size
		if limit > 0 && total > limit {
			return 0, fmt.Errorf("%w: the files of commit %s are larger than %d bytes (at %s)",
				ErrRepositoryTooLarge, head, limit, name)
		}
	}
}
