package gitops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-logr/logr"

	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

// write applies a batch on top of the remote branch and pushes one commit.
// It returns the branch head that contains the batch. On a non-fast-forward
// rejection it fetches, resets and re-applies the same changes on the new
// head, waiting with capped exponential backoff between attempts; it never
// force-pushes.
func (w *Writer) write(ctx context.Context, st *repoState, auth Auth, batch []*request) (string, error) {
	log := logr.FromContextOrDiscard(ctx).WithValues(
		"repository", redactURL(st.url), "branch", st.branch, "changes", len(batch))

	repo, base, err := w.checkout(ctx, st, auth)
	if err != nil {
		return "", err
	}
	delay := w.opts.backoff.Initial
	for attempt := 1; ; attempt++ {
		commit, err := w.commit(repo, st, base, batch)
		if err != nil {
			return "", err
		}
		if commit.IsZero() {
			log.V(1).Info("Git branch already up to date", "head", hashString(base))
			return hashString(base), nil
		}

		if w.opts.beforePush != nil {
			w.opts.beforePush()
		}
		pushErr := push(ctx, repo, auth, st.branch)
		if pushErr == nil {
			log.Info("Pushed Git commit", "commit", commit.String(), "attempt", attempt)
			return commit.String(), nil
		}
		moved, err := remoteMoved(ctx, repo, auth, st.branch, base, commit, pushErr)
		switch {
		case err != nil:
			return "", err
		case !moved:
			// The error was transient but the commit landed.
			log.Info("Pushed Git commit", "commit", commit.String(), "attempt", attempt)
			return commit.String(), nil
		case attempt >= w.opts.backoff.Attempts:
			return "", fmt.Errorf("push to branch %s: %d attempts rejected: %w (last: %w)",
				st.branch, attempt, ErrPushConflict, pushErr)
		}

		metrics.GitPushRetried()
		log.V(1).Info("Remote branch moved during push, re-applying changes", "attempt", attempt, "wait", delay)
		if err := sleep(ctx, delay); err != nil {
			return "", fmt.Errorf("wait to retry push: %w", err)
		}
		delay = min(2*delay, w.opts.backoff.Max)
		if base, err = w.sync(ctx, st, repo, auth); err != nil {
			return "", err
		}
	}
}

// push sends the local branch to the remote without force.
func push(ctx context.Context, repo *git.Repository, auth Auth, branch string) error {
	ref := plumbing.NewBranchReferenceName(branch)
	err := repo.PushContext(ctx, &git.PushOptions{
		RemoteName:   remoteName,
		RefSpecs:     []config.RefSpec{config.RefSpec(ref + ":" + ref)},
		Auth:         auth.method,
		CABundle:     auth.caBundle,
		ProxyOptions: auth.proxyOptions(ctx),
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// remoteMoved explains a failed push by the state of the remote branch, not
// by the error text (go-git reports a non-fast-forward update only as a
// formatted string): moved is true when the branch is no longer at base, the
// commit we built on, so the push must be redone on the new head. It returns
// moved=false and no error when the branch already is at commit (the push
// landed despite the error), and the push error itself when the branch is
// still at base or cannot be read.
func remoteMoved(ctx context.Context, repo *git.Repository, auth Auth, branch string, base, commit plumbing.Hash, pushErr error) (bool, error) {
	pushErr = classifyRemote(pushErr)
	if errors.Is(pushErr, ErrAuthFailed) || errors.Is(pushErr, ErrForbidden) {
		return false, fmt.Errorf("push to branch %s: %w", branch, pushErr)
	}
	head, err := remoteHead(ctx, repo, auth, branch)
	switch {
	case err != nil:
		return false, fmt.Errorf("push to branch %s: %w", branch, pushErr)
	case head == commit:
		return false, nil
	case head == base:
		return false, fmt.Errorf("push to branch %s: %w", branch, pushErr)
	default:
		return true, nil
	}
}

// remoteHead lists the remote and returns the branch head, zero if absent.
func remoteHead(ctx context.Context, repo *git.Repository, auth Auth, branch string) (plumbing.Hash, error) {
	remote, err := repo.Remote(remoteName)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("list remote: %w", err)
	}
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth.method, CABundle: auth.caBundle, ProxyOptions: auth.proxyOptions(ctx)})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("list remote: %w", classifyRemote(err))
	}
	name := plumbing.NewBranchReferenceName(branch)
	for _, ref := range refs {
		if ref.Name() == name {
			return ref.Hash(), nil
		}
	}
	return plumbing.ZeroHash, nil
}

// commit applies the changes of the batch that differ from base to base's tree (treeEdit: no
// worktree) and commits the result on the branch. It sets request.changed and returns the zero
// hash when nothing differs (never an empty commit).
func (w *Writer) commit(repo *git.Repository, st *repoState, base plumbing.Hash, batch []*request) (plumbing.Hash, error) {
	var baseTree *object.Tree
	if !base.IsZero() {
		c, err := repo.CommitObject(base)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read head commit: %w", err)
		}
		if baseTree, err = c.Tree(); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read head tree: %w", err)
		}
	}
	edit := newTreeEdit(repo.Storer, baseTree)

	owned, err := st.ownersAt(base, baseTree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	// When one owner changes a folder twice in one batch, the later change wins. Changes of
	// different owners are taken in arrival order: the first claims a free folder, and an
	// overlapping change after it is refused like one overlapping a folder already on the
	// branch.
	key := func(r *request) string { return r.change.Owner.ID + "\x00" + r.change.Path }
	last := map[string]*request{}
	for _, r := range batch {
		if r.err == nil {
			last[key(r)] = r
		}
	}
	var applied []*request
	for _, r := range batch {
		r.changed, r.created = false, false
		if r.err != nil || last[key(r)] != r {
			continue
		}
		if err := owned.conflict(r.change.Path, r.change.Owner); err != nil {
			r.err = fmt.Errorf("app %s: %w", r.change.AppKey, err)
			continue
		}
		c := r.change
		own, marked := st.owners[c.Path]
		if !c.Delete && base.IsZero() && st.branchMissing && !c.CreateBranch {
			r.err = fmt.Errorf("app %s: %w: the repository has no branch %q", c.AppKey, ErrBranchNotFound, st.branch)
			continue
		}
		if !c.Delete && st.treeTooLarge != nil {
			r.err = fmt.Errorf("app %s: %w", c.AppKey, st.treeTooLarge)
			continue
		}
		if c.Delete {
			if !marked {
				// No marker of this owner: nothing there was written by it (the conflict check
				// above refused another owner's). It is left alone, whatever it holds.
				continue
			}
			c.only = own.Files
		} else if err := unownedContent(baseTree, c.Path, marked); err != nil {
			r.err = fmt.Errorf("app %s: %w", c.AppKey, err)
			continue
		}
		differs, err := differsFrom(baseTree, c)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("compare %s with head: %w", c.Path, err)
		}
		if c.Delete {
			delete(owned, c.Path)
		} else {
			owned[c.Path] = mark{Owner: c.Owner, Files: c.fileNames()}
		}
		if !differs {
			continue
		}
		if err := edit.writable(c.Path); err != nil {
			if !errors.Is(err, ErrInvalidPath) {
				return plumbing.ZeroHash, err
			}
			r.err = fmt.Errorf("app %s: %w", c.AppKey, err)
			continue
		}
		if err := edit.apply(c); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("write %s: %w", c.Path, err)
		}
		r.changed, r.created = true, !c.Delete && !marked
		applied = append(applied, r)
	}
	defer func() {
		for _, r := range batch {
			if winner := last[key(r)]; r.err == nil && winner != r {
				r.changed, r.created, r.err = winner.changed, winner.created, winner.err
			}
		}
	}()
	if len(applied) == 0 {
		return plumbing.ZeroHash, nil
	}

	tree, err := edit.write()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("write trees: %w", err)
	}
	if baseTree != nil && tree == baseTree.Hash {
		// Defensive: differsFrom said otherwise, but the tree has the last word.
		for _, r := range applied {
			r.changed, r.created = false, false
		}
		return plumbing.ZeroHash, nil
	}
	sig := object.Signature{Name: w.opts.authorName, Email: w.opts.authorEmail, When: w.opts.clock.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: commitMessage(applied), TreeHash: tree}
	if !base.IsZero() {
		c.ParentHashes = []plumbing.Hash{base}
	}
	obj := repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: %w", err)
	}
	hash, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: %w", err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(st.branch), hash)); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: move the branch: %w", err)
	}
	return hash, nil
}

// commitMessage is the change's own message for one change, else a summary
// line and the first line of each change's message, sorted. Every change's
// trailers end the message, in one last paragraph (sorted in a batch).
func commitMessage(applied []*request) string {
	var trailers []string
	for _, r := range applied {
		trailers = append(trailers, r.change.Trailers...)
	}
	block := ""
	if len(trailers) > 0 {
		if len(applied) > 1 {
			sort.Strings(trailers)
		}
		block = "\n" + strings.Join(trailers, "\n") + "\n"
	}
	if len(applied) == 1 {
		return applied[0].change.message() + "\n" + block
	}
	lines := make([]string, 0, len(applied))
	for _, r := range applied {
		first, _, _ := strings.Cut(r.change.message(), "\n")
		first = strings.TrimSpace(first)
		if !strings.Contains(first, r.change.AppKey) {
			first = r.change.AppKey + ": " + first
		}
		lines = append(lines, "- "+first)
	}
	sort.Strings(lines)
	return fmt.Sprintf("kubeopera: update %d apps\n\n%s\n", len(applied), strings.Join(lines, "\n")) + block
}

func hashString(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ownersAt returns a copy of the owners of the folders of base, read once per base commit.
func (st *repoState) ownersAt(base plumbing.Hash, tree *object.Tree) (owners, error) {
	if st.owners == nil || st.ownersBase != base {
		o, err := readOwners(tree)
		if err != nil {
			return nil, fmt.Errorf("read folder owners: %w", err)
		}
		st.owners, st.ownersBase = o, base
	}
	return maps.Clone(st.owners), nil
}
