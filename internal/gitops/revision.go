package gitops

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-logr/logr"
)

// ErrRevisionNotFound means a commit asked about is not in the local clone, not even after
// one fetch of the branch's last RevisionFetchDepth commits: it is older than that, or not on
// the branch (the branch was rewritten).
var ErrRevisionNotFound = errors.New("git revision not found on the branch")

// RevisionFetchDepth is how many commits of the branch the one fetch of SameFolder brings
// when a commit asked about is not in the clone. It bounds that fetch (together with
// WithMaxRepositorySize): a revision Flux applied is normally the branch head or a few
// commits behind it.
const RevisionFetchDepth = 50

// Bounds of the per-branch caches of SameFolder: folder trees by (commit, folder), and the
// commits a fetch did not find. Commits never change, so an entry never goes stale; a full
// cache is emptied and filled again.
const (
	maxFolderTrees     = 4096
	maxMissingCommits  = 256
	folderAbsentMarker = "-"
)

// folderKey names the tree of one folder at one commit.
type folderKey struct {
	commit plumbing.Hash
	path   string
}

// revisionCache holds what SameFolder learnt about a branch (guarded by mu, not by the
// repoState's work lock, so an answer it already knows never waits for a running batch).
type revisionCache struct {
	mu sync.Mutex
	// trees maps (commit, folder) to the folder's tree hash, folderAbsentMarker when the
	// commit has no such folder.
	trees map[folderKey]string
	// missing holds commits that were not in the clone after the one bounded fetch: they are
	// not fetched for again.
	missing map[plumbing.Hash]bool
	// log holds the commits Log read, by hash.
	log map[plumbing.Hash]cachedLogEntry
}

func (c *revisionCache) tree(commit plumbing.Hash, path string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.trees[folderKey{commit, path}]
	return t, ok
}

// treesOf returns the trees of path at a and at b when both are cached.
func (c *revisionCache) treesOf(a, b plumbing.Hash, path string) (ta, tb string, ok bool) {
	ta, okA := c.tree(a, path)
	tb, okB := c.tree(b, path)
	return ta, tb, okA && okB
}

func (c *revisionCache) putTree(commit plumbing.Hash, path, tree string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trees == nil || len(c.trees) >= maxFolderTrees {
		c.trees = map[folderKey]string{}
	}
	c.trees[folderKey{commit, path}] = tree
}

func (c *revisionCache) isMissing(commit plumbing.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.missing[commit]
}

func (c *revisionCache) putMissing(commit plumbing.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.missing == nil || len(c.missing) >= maxMissingCommits {
		c.missing = map[plumbing.Hash]bool{}
	}
	c.missing[commit] = true
}

// SameFolder reports whether folder path of the branch of repo holds the same content (the
// same Git tree: the same files with the same bytes and modes) at commits a and b. A folder
// absent at both counts as the same; absent at one only, as different.
//
// It reads the Writer's local clone of the branch: the commits a batch pushed or fetched are
// there, so the common case reads objects only (and answers from a cache once asked). A commit
// that is not in the clone (pushed by another writer since the last fetch, or older than the
// shallow clone holds) is fetched for once: the branch's last RevisionFetchDepth commits,
// within WithMaxRepositorySize. A commit still missing then fails with ErrRevisionNotFound and
// is never fetched for again. A lookup that needs the clone while a batch (or another lookup) of
// the branch holds it does not wait: it fails with a *BusyError (ErrBranchBusy) whose Freed
// channel says when to ask again.
func (w *Writer) SameFolder(ctx context.Context, repo Repo, path, a, b string) (bool, error) {
	if err := repo.validate(); err != nil {
		return false, err
	}
	if err := validatePath(path); err != nil {
		return false, err
	}
	ha, hb := parseCommit(a), parseCommit(b)
	if ha.IsZero() || hb.IsZero() {
		return false, fmt.Errorf("%w: commits %q and %q must be full SHA-1 hashes", ErrInvalidChange, a, b)
	}
	if ha == hb {
		return true, nil
	}
	st := w.state(repo)
	defer w.unref(st)
	ta, tb, err := w.folderTrees(ctx, st, repo.Auth, path, ha, hb)
	if err != nil {
		return false, err
	}
	return ta == tb, nil
}

// SameFolderKnown answers SameFolder only from what the Writer already holds, without waiting
// and without the network: from its cache, or from the local clone of the branch when no batch
// or lookup holds it and both commits are in it. known is false otherwise (no clone, a commit it
// does not have, the clone in use, malformed input); the caller then asks SameFolder, or does
// without. When the clone was in use, freed is closed once it is free (ask again then); it is nil
// otherwise. It never creates a branch's state.
func (w *Writer) SameFolderKnown(repo Repo, path, a, b string) (same, known bool, freed <-chan struct{}) {
	ha, hb := parseCommit(a), parseCommit(b)
	if ha.IsZero() || hb.IsZero() || validatePath(path) != nil {
		return false, false, nil
	}
	if ha == hb {
		return true, true, nil
	}
	w.mu.Lock()
	st, ok := w.repos[cloneDirName(repo.URL, repo.branch())]
	if ok {
		st.refs++
	}
	w.mu.Unlock()
	if !ok {
		return false, false, nil
	}
	defer w.unref(st)
	if ta, tb, ok := st.revisions.treesOf(ha, hb, path); ok {
		return ta == tb, true, nil
	}
	var busy *BusyError
	if err := st.lookupLock(); errors.As(err, &busy) {
		return false, false, busy.Freed
	}
	defer st.work.Unlock()
	if _, err := os.Stat(filepath.Join(st.dir, git.GitDirName)); err != nil {
		return false, false, nil // no clone (evicted, or never made)
	}
	clone, err := openClone(st.dir)
	if err != nil {
		return false, false, nil
	}
	ta, tb, err := readFolderTrees(clone, path, ha, hb)
	if err != nil {
		return false, false, nil
	}
	st.revisions.putTree(ha, path, ta)
	st.revisions.putTree(hb, path, tb)
	return ta == tb, true, nil
}

// parseCommit is the hash of a full hex SHA-1, zero otherwise.
func parseCommit(s string) plumbing.Hash {
	if len(s) != 40 {
		return plumbing.ZeroHash
	}
	if _, err := hex.DecodeString(s); err != nil {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(s)
}

// folderTrees returns the tree of path at a and at b, from the cache or the clone, fetching
// once when the clone lacks one of them.
func (w *Writer) folderTrees(ctx context.Context, st *repoState, auth Auth, path string, a, b plumbing.Hash) (string, string, error) {
	if ta, tb, ok := st.revisions.treesOf(a, b, path); ok {
		return ta, tb, nil
	}
	for _, h := range []plumbing.Hash{a, b} {
		if st.revisions.isMissing(h) {
			return "", "", fmt.Errorf("%w: commit %s of branch %s of %s (not among its last %d commits)",
				ErrRevisionNotFound, h, st.branch, redactURL(st.url), RevisionFetchDepth)
		}
	}

	if err := st.lookupLock(); err != nil {
		return "", "", err
	}
	defer st.work.Unlock()
	repo, err := w.open(st)
	if err != nil {
		return "", "", err
	}
	ta, tb, err := readFolderTrees(repo, path, a, b)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		logr.FromContextOrDiscard(ctx).Info("Fetching the branch's recent history: a revision to compare is not in the local clone",
			"repository", redactURL(st.url), "branch", st.branch, "commits", []string{a.String(), b.String()}, "depth", RevisionFetchDepth)
		if err := w.fetchHistory(ctx, st, repo, auth); err != nil {
			return "", "", err
		}
		ta, tb, err = readFolderTrees(repo, path, a, b)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			for _, h := range []plumbing.Hash{a, b} {
				if _, cerr := repo.CommitObject(h); errors.Is(cerr, plumbing.ErrObjectNotFound) {
					st.revisions.putMissing(h)
				}
			}
			return "", "", fmt.Errorf("%w: branch %s of %s, commits %s and %s (looked among its last %d commits)",
				ErrRevisionNotFound, st.branch, redactURL(st.url), a, b, RevisionFetchDepth)
		}
	}
	if err != nil {
		return "", "", fmt.Errorf("read folder %s: %w", path, err)
	}
	st.revisions.putTree(a, path, ta)
	st.revisions.putTree(b, path, tb)
	return ta, tb, nil
}

// readFolderTrees reads the tree of path at a and at b from repo; an error wrapping
// plumbing.ErrObjectNotFound when an object is not in the clone.
func readFolderTrees(repo *git.Repository, path string, a, b plumbing.Hash) (string, string, error) {
	ta, err := readFolderTree(repo, path, a)
	if err != nil {
		return "", "", err
	}
	tb, err := readFolderTree(repo, path, b)
	if err != nil {
		return "", "", err
	}
	return ta, tb, nil
}

// readFolderTree is the hash of the tree of path at commit, folderAbsentMarker when the commit
// has no folder there.
func readFolderTree(repo *git.Repository, path string, commit plumbing.Hash) (string, error) {
	c, err := repo.CommitObject(commit)
	if err != nil {
		return "", fmt.Errorf("commit %s: %w", commit, err)
	}
	root, err := c.Tree()
	if err != nil {
		return "", fmt.Errorf("tree of commit %s: %w", commit, err)
	}
	_, entry, err := lookup(root, path)
	switch {
	case err != nil:
		return "", fmt.Errorf("folder at commit %s: %w", commit, err)
	case entry == nil || entry.Mode != filemode.Dir:
		return folderAbsentMarker, nil
	}
	return entry.Hash.String(), nil
}

// fetchHistory fetches the branch's last RevisionFetchDepth commits into the clone, within the
// size limit (a clone over it is deleted, as after a sync). It moves the remote-tracking
// branch only; every batch syncs and resets before it writes.
func (w *Writer) fetchHistory(ctx context.Context, st *repoState, repo *git.Repository, auth Auth) error {
	ctx, cancel := context.WithTimeout(ctx, w.opts.timeout)
	defer cancel()
	budget, err := w.fetchBudget(st)
	if err != nil {
		return err
	}
	inflated := int64(-1)
	if w.opts.maxInflatedSize > 0 {
		inflated = w.opts.maxInflatedSize
	}
	// No WithMaxConcurrentOperations slot: the caller holds the branch's work lock, which that
	// branch's batch takes after its slot, so waiting for a slot here could deadlock. History
	// fetches are at most one per branch at a time and happen once per missing commit.
	fetcher, err := fetchRemote(repo, fetchLimits{pack: budget, inflated: inflated})
	if err != nil {
		return err
	}
	err = fetcher.FetchContext(ctx, &git.FetchOptions{
		RemoteName:   remoteName,
		RefSpecs:     []config.RefSpec{fetchRefSpec(st.branch)},
		Auth:         auth.method,
		CABundle:     auth.caBundle,
		ProxyOptions: auth.proxyOptions(ctx),
		Tags:         git.NoTags,
		Force:        true,
		Depth:        RevisionFetchDepth,
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, ErrRepositoryTooLarge):
		if rmErr := os.RemoveAll(st.dir); rmErr != nil {
			return fmt.Errorf("remove oversized clone: %w", rmErr)
		}
		return fmt.Errorf("fetch the history of branch %s of %s, limit %d bytes: %w",
			st.branch, redactURL(st.url), w.opts.maxRepoSize, err)
	default:
		return auth.redact(fmt.Errorf("fetch the history of branch %s: %w", st.branch, classifyRemote(err)))
	}
	return w.checkSize(st)
}
