package gitops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-logr/logr"
)

const (
	remoteName = "origin"
	// maxPackFiles triggers a fresh clone: go-git never repacks, and every
	// fetch of outside commits adds a pack file that later reads must scan.
	maxPackFiles = 50
)

// errStaleClone marks a clone that must be replaced although it is readable.
var errStaleClone = errors.New("local clone needs to be replaced")

// checkout returns the clone of st, reset to the remote branch head, and that
// head (zero when the branch does not exist on the remote yet). A clone that
// cannot be opened or synced for a local reason is deleted and fetched again
// once; network and server errors are returned as they are.
func (w *Writer) checkout(ctx context.Context, st *repoState, auth Auth) (*git.Repository, plumbing.Hash, error) {
	repo, head, err := w.openAndSync(ctx, st, auth)
	if err == nil || isRemoteError(err) {
		return repo, head, err
	}
	logr.FromContextOrDiscard(ctx).Info("Replacing local Git clone",
		"repository", redactURL(st.url), "branch", st.branch, "reason", err.Error())
	if rmErr := os.RemoveAll(st.dir); rmErr != nil {
		return nil, plumbing.ZeroHash, fmt.Errorf("remove broken clone: %w", rmErr)
	}
	return w.openAndSync(ctx, st, auth)
}

func (w *Writer) openAndSync(ctx context.Context, st *repoState, auth Auth) (*git.Repository, plumbing.Hash, error) {
	repo, err := w.open(st)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	head, err := w.sync(ctx, st, repo, auth)
	if err != nil {
		return nil, plumbing.ZeroHash, err
	}
	return repo, head, nil
}

// sync fetches the branch into the clone within the size limits and resets the branch to it
// (syncBranch). A clone over a limit, or a fetch cut off at one, is deleted: the cache never
// holds a partial clone.
func (w *Writer) sync(ctx context.Context, st *repoState, repo *git.Repository, auth Auth) (plumbing.Hash, error) {
	budget, err := w.fetchBudget(st)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	inflated := int64(-1)
	if w.opts.maxInflatedSize > 0 {
		inflated = w.opts.maxInflatedSize
		if st.deletionsOnly {
			inflated *= deletionFetchFactor
		}
	}
	head, missing, err := syncBranch(ctx, repo, auth, st.branch, fetchLimits{pack: budget, inflated: inflated},
		func(head plumbing.Hash) error { return w.checkTreeSize(st, repo, head) })
	st.branchMissing = missing
	if err == nil && head.IsZero() {
		// No branch (yet): no files.
		st.treeBase, st.treeTooLarge = plumbing.ZeroHash, nil
	}
	if errors.Is(err, ErrRepositoryTooLarge) {
		if rmErr := os.RemoveAll(st.dir); rmErr != nil {
			return plumbing.ZeroHash, fmt.Errorf("remove oversized clone: %w", rmErr)
		}
		st.diskBytes.Store(0)
		return plumbing.ZeroHash, fmt.Errorf("branch %s of %s, limits %s: %w",
			st.branch, redactURL(st.url), w.limitsText(), err)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.checkSize(st); err != nil {
		return plumbing.ZeroHash, err
	}
	return head, nil
}

// fetchBudget is how many pack bytes the next fetch may bring: the room the
// clone's object store has left under WithMaxRepositorySize (unlimited: -1).
func (w *Writer) fetchBudget(st *repoState) (int64, error) {
	if w.opts.maxRepoSize <= 0 {
		return -1, nil
	}
	size, err := objectStoreSize(st)
	if err != nil {
		return 0, err
	}
	return max(w.opts.maxRepoSize-size, 0), nil
}

// limitsText names the size limits in force, for error messages.
func (w *Writer) limitsText() string {
	text := func(n int64) string {
		if n <= 0 {
			return "none"
		}
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("repository %s, inflated %s", text(w.opts.maxRepoSize), text(w.opts.maxInflatedSize))
}

// deletionFetchFactor is how many times WithMaxInflatedSize the deletions of a batch cut off at
// the limit may fetch when they are written again alone. A branch whose files grew past the
// limit (an app's neighbours, a large file someone pushed) refuses every change that writes
// files (ErrRepositoryTooLarge), but the folders of deleted apps and offboarded namespaces must
// still go: that is how the branch gets smaller. A deletion needs the head's trees, which go-git
// fetches only with the files, hence the larger bound, for one such batch at a time
// (writeDeletionsOverLimit). A branch beyond it still holds its deletions.
const deletionFetchFactor = 2

// checkTreeSize measures, before the writer reads it, whether the head's files are larger
// together than WithMaxInflatedSize, and records the answer in st.treeTooLarge: commit then
// refuses every change that writes files with it, and lets deletions through. The sizes come
// from the objects' headers (no object is inflated for it), and the answer is remembered per
// commit: a branch head changes far less often than batches run. Other errors are returned.
func (w *Writer) checkTreeSize(st *repoState, repo *git.Repository, head plumbing.Hash) error {
	if st.treeBase == head {
		return nil
	}
	_, err := treeFilesSize(repo, head, w.opts.maxInflatedSize)
	switch {
	case errors.Is(err, ErrRepositoryTooLarge):
		st.treeTooLarge = fmt.Errorf("branch %s of %s, limits %s: %w", st.branch, redactURL(st.url), w.limitsText(), err)
	case err != nil:
		return err
	default:
		st.treeTooLarge = nil
	}
	st.treeBase = head
	return nil
}

// checkSize enforces WithMaxRepositorySize on the clone's object store after a fetch (the fetch
// itself is bounded by fetchBudget; the pack index and loose objects come on top), deletes a clone
// over the limit, and records what the clone holds on disk (its object store: a clone has no
// worktree) for evictIdleClones.
func (w *Writer) checkSize(st *repoState) error {
	size, err := objectStoreSize(st)
	if err != nil {
		return err
	}
	st.diskBytes.Store(size)
	if w.opts.maxRepoSize <= 0 || size <= w.opts.maxRepoSize {
		return nil
	}
	if err := os.RemoveAll(st.dir); err != nil {
		return fmt.Errorf("remove oversized clone: %w", err)
	}
	st.diskBytes.Store(0)
	return fmt.Errorf("%w: branch %s of %s needs %d bytes, the limit is %d",
		ErrRepositoryTooLarge, st.branch, redactURL(st.url), size, w.opts.maxRepoSize)
}

// objectStoreSize is the size of the clone's object store in bytes.
func objectStoreSize(st *repoState) (int64, error) {
	var size int64
	err := filepath.WalkDir(filepath.Join(st.dir, git.GitDirName, "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure clone: %w", err)
	}
	return size, nil
}

// open opens the clone of st, or initialises an empty one with the remote
// configured; the first sync fetches it. Init+fetch instead of clone handles
// an empty remote and a missing branch the same way as an existing one.
func (w *Writer) open(st *repoState) (*git.Repository, error) {
	_, err := os.Stat(filepath.Join(st.dir, git.GitDirName))
	if errors.Is(err, fs.ErrNotExist) {
		return initClone(st)
	}
	if err != nil {
		return nil, fmt.Errorf("open clone: %w", err)
	}
	repo, err := openClone(st.dir)
	if err != nil {
		return nil, fmt.Errorf("open clone: %w", err)
	}
	remote, err := repo.Remote(remoteName)
	if err != nil {
		return nil, fmt.Errorf("open clone: %w", err)
	}
	if urls := remote.Config().URLs; len(urls) != 1 || urls[0] != st.url {
		return nil, fmt.Errorf("open clone: remote points elsewhere: %w", errStaleClone)
	}
	packs, err := filepath.Glob(filepath.Join(st.dir, git.GitDirName, "objects", "pack", "*.pack"))
	if err != nil {
		return nil, fmt.Errorf("open clone: %w", err)
	}
	if len(packs) > maxPackFiles {
		return nil, fmt.Errorf("open clone: %d pack files: %w", len(packs), errStaleClone)
	}
	return repo, nil
}

func initClone(st *repoState) (*git.Repository, error) {
	// A directory without .git is a half-created clone: start over.
	if err := os.RemoveAll(st.dir); err != nil {
		return nil, fmt.Errorf("init clone: %w", err)
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return nil, fmt.Errorf("init clone: %w", err)
	}
	repo, err := git.PlainInit(st.dir, false)
	if err != nil {
		return nil, fmt.Errorf("init clone: %w", err)
	}
	_, err = repo.CreateRemote(&config.RemoteConfig{
		Name:  remoteName,
		URLs:  []string{st.url},
		Fetch: []config.RefSpec{fetchRefSpec(st.branch)},
	})
	if err != nil {
		return nil, fmt.Errorf("init clone: %w", err)
	}
	if repo, err = openClone(st.dir); err != nil {
		return nil, fmt.Errorf("init clone: %w", err)
	}
	return repo, nil
}

// Memory of go-git per open clone. By default go-git reads every object it is asked for whole
// into memory and caches up to 96 MiB of objects per opened repository; a clone is opened per
// batch, and several batches run at once.
const (
	// largeObjectThreshold: objects larger than this are streamed from the pack (a checkout
	// copies the file through a small buffer) instead of being read whole into memory.
	largeObjectThreshold = 1 << 20
	// objectCacheSize bounds go-git's object cache of one open clone.
	objectCacheSize = 8 << 20
)

// openClone opens the clone in dir with the memory bounds above, without its worktree: the
// Writer reads and writes objects and references only (treeEdit), so no file of the branch is
// ever checked out.
func openClone(dir string) (*git.Repository, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	dot, err := osfs.New(dir).Chroot(git.GitDirName)
	if err != nil {
		return nil, err
	}
	storage := filesystem.NewStorageWithOptions(dot, cache.NewObjectLRU(objectCacheSize),
		filesystem.Options{LargeObjectThreshold: largeObjectThreshold})
	return git.Open(storage, nil)
}

// fetchRefSpec fetches only the branch, forced: the tracking ref must follow
// the remote even when someone rewrote the branch.
func fetchRefSpec(branch string) config.RefSpec {
	return config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/%s/%s", branch, remoteName, branch))
}

// syncBranch fetches the branch (shallow: only its head commit and what it
// needs; go-git pushes from a shallow clone, see
// TestShallowCloneFetchesOnlyTheHeadAndPushes) and hard-resets the worktree to the remote head, so
// whatever happened to the remote (outside commits, force pushes, deletion)
// and whatever a failed attempt left locally, the next change starts from
// exactly what the remote has. It returns the remote head, zero when the
// remote has no such branch (then the worktree is emptied), and whether the
// branch is missing from a remote that has other branches (an empty remote
// is not missing it: its first branch is to come).
//
// limits bound the pack bytes the fetch may bring and what its objects inflate to (negative: no
// bound); a pack that would exceed either is cut off while it arrives (see limitedStorage) and the
// fetch fails with ErrRepositoryTooLarge. check runs on the fetched head before the branch is
// reset to it; its error ends the sync.
func syncBranch(ctx context.Context, repo *git.Repository, auth Auth, branch string, limits fetchLimits,
	check func(plumbing.Hash) error) (head plumbing.Hash, missing bool, err error) {
	fetcher, err := fetchRemote(repo, limits)
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	err = fetcher.FetchContext(ctx, &git.FetchOptions{
		RemoteName:   remoteName,
		RefSpecs:     []config.RefSpec{fetchRefSpec(branch)},
		Auth:         auth.method,
		CABundle:     auth.caBundle,
		ProxyOptions: auth.proxyOptions(ctx),
		Tags:         git.NoTags,
		Force:        true,
		Depth:        1,
	})
	tracking := plumbing.NewRemoteReferenceName(remoteName, branch)
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.Is(err, git.NoMatchingRefSpecError{}):
		missing := !errors.Is(err, transport.ErrEmptyRemoteRepository)
		if err := repo.Storer.RemoveReference(tracking); err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("forget deleted remote branch: %w", err)
		}
		return plumbing.ZeroHash, missing, resetToEmpty(repo, branch)
	default:
		return plumbing.ZeroHash, false, fmt.Errorf("fetch branch %s: %w", branch, classifyRemote(err))
	}
	ref, err := repo.Reference(tracking, true)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read fetched branch %s: %w", branch, err)
	}
	if err := check(ref.Hash()); err != nil {
		return plumbing.ZeroHash, false, err
	}
	return ref.Hash(), false, resetTo(repo, branch, ref.Hash())
}

// resetTo points HEAD at branch and the branch at head. The clone has no worktree (commits are
// built from trees, treeEdit), so nothing else follows.
func resetTo(repo *git.Repository, branch string, head plumbing.Hash) error {
	branchRef := plumbing.NewBranchReferenceName(branch)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(branchRef, head)); err != nil {
		return fmt.Errorf("reset branch: %w", err)
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branchRef)); err != nil {
		return fmt.Errorf("reset HEAD: %w", err)
	}
	return nil
}

// resetToEmpty prepares the first commit of branch: HEAD names the unborn branch.
func resetToEmpty(repo *git.Repository, branch string) error {
	branchRef := plumbing.NewBranchReferenceName(branch)
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, branchRef)); err != nil {
		return fmt.Errorf("reset HEAD: %w", err)
	}
	if err := repo.Storer.RemoveReference(branchRef); err != nil {
		return fmt.Errorf("reset branch: %w", err)
	}
	return nil
}
