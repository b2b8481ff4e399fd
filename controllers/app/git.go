package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// errGitSecretNotFound: the Secret named by spec.git.secretRef does not exist.
var errGitSecretNotFound = errors.New("git credentials Secret not found")

// commitManifests renders the app's folder and commits it. The Git writer groups the changes of
// apps reconciled at the same time into one commit and one push, makes no commit when the files
// are unchanged, and refuses a folder that overlaps another app's (PathConflict) or a branch
// the repository does not have (GitBranchNotFound, unless the app asks for it). When the folder
// moved (path, URL or branch changed), the old folder is left in place here: finishMove removes
// it once Flux reads the new one.
func (r *Reconciler) commitManifests(ctx context.Context, s *scope) error {
	const cond = kubeoperav1alpha1.ConditionManifestsCommitted
	files := s.files
	manifests := manifestsDigest(files)
	restores := restoredCommit(s.app, manifests)
	var last kubeoperav1alpha1.AppRevision
	if len(s.app.Status.History) > 0 {
		last = s.app.Status.History[0]
	}
	here := r.specLocation(s.app)
	repo, err := r.gitRepo(ctx, s, here)
	if err != nil {
		return gitError(cond, err)
	}
	r.repoUsers.use(s.key, here)
	change := gitops.Change{
		AppKey:       s.key.String(),
		Path:         here.path,
		Owner:        owner(s.app),
		Files:        files,
		Message:      commitMessage(s.app, "update"),
		Trailers:     []string{appTrailer(s.app, manifests, restores)},
		CreateBranch: annotated(s.app, kubeoperav1alpha1.AnnotationCreateGitBranch),
	}
	res, err := r.submitManifests(ctx, s, repo, change)
	if outcome.IsPending(err) {
		return err
	}
	// The outcome stays recorded until the pass's status is written (Reconcile): a pass that
	// ends without writing it (it waits for a branch another batch holds, or the write fails)
	// leaves it for the next pass, which records the commit.
	s.outcomesRead = append(s.outcomesRead, folderOf(repo, change))
	ctrl.LoggerFrom(ctx).V(1).Info("Git write done", "changed", res.Changed, "commit", res.Commit, "error", err)
	if err != nil {
		return gitError(cond, adoptionHint(s.app, err))
	}
	s.head = res.Commit
	// Read before anything is recorded, so that a pass that ends here (the branch is busy)
	// records nothing twice. An app whose status was lost has no last commit: the history
	// restored below and this never both read the branch in one pass.
	var reverted []string
	if res.Changed && last.Manifests == manifests && last.Commit != "" {
		// The app wants what its last commit wrote, yet the folder held something else: a
		// change made outside the operator, now reverted.
		if reverted, err = r.changesMadeOutside(ctx, s, repo, here.path, res.Commit, last.Commit); err != nil {
			return err
		}
	}
	// status.commit is the commit that last changed the app's folder: a later commit of
	// another app in the same repository does not replace it.
	if !res.Changed {
		restores = ""
	}
	if prev := s.app.Status.Commit; res.Changed || prev == "" {
		s.app.Status.Commit = res.Commit
		// A folder this commit created has no history to read back: a new app looks like one
		// whose status was lost (its placement is recorded before its first commit).
		if s.statusLost && !res.Created {
			if err := r.restoreHistory(ctx, s, repo, res, manifests); err != nil {
				return err
			}
		}
		if s.app.Status.Commit != prev {
			recordRevision(s.app, metav1.Now(), manifests, restores)
		}
	}
	committed := fmt.Sprintf("Commit %s on branch %s, folder %s", s.app.Status.Commit, repo.Branch, here.path)
	if c := findCondition(s.app, cond); !res.Changed && c != nil && strings.HasPrefix(c.Message, committed+"; ") {
		// What the commit reverted stays said while it is the app's commit.
		committed = c.Message
	}
	if res.Changed {
		msg := fmt.Sprintf("Committed %s to branch %s at %s", shortCommit(res.Commit), repo.Branch, here.path)
		if restores != "" {
			msg += fmt.Sprintf(", restoring the manifests of commit %s", shortCommit(restores))
		}
		r.event(s.app, corev1.EventTypeNormal, "Committed", actionReconcile, msg)
		if len(reverted) > 0 {
			note := fmt.Sprintf("reverted changes made outside the operator to folder %s in commit %s", here.path, strings.Join(shortCommits(reverted), ", "))
			r.event(s.app, corev1.EventTypeWarning, eventManualChangeReverted, actionReconcile, fmt.Sprintf("Commit %s %s", shortCommit(res.Commit), note))
			committed += "; " + note
		}
	}
	r.stepSucceeded(s.app, cond, committed)
	s.committed = true
	return nil
}

// eventManualChangeReverted: the app's folder held a change made outside the operator (a person
// or another tool pushed to it), which the pass's commit reverted.
const eventManualChangeReverted = "ManualChangeReverted"

// changesMadeOutside are the commits, newest first, between head (the pass's commit, exclusive)
// and since (the app's last commit, exclusive) that changed folder path and carry no trailer of
// the app: changes made outside the operator. It reads the branch's recent history
// (gitops.Writer.Log) and compares the folder across each such commit (gitops.Writer.SameFolder);
// commits older than that history are not looked at. A history that cannot be read is logged:
// the revert is still reported by the caller's commit, without the commits' names. The error is
// a hand-off (outcome.Pending) only: another batch of the branch holds its clone, and the pass
// ends to ask again once it is free.
func (r *Reconciler) changesMadeOutside(ctx context.Context, s *scope, repo gitops.Repo, path, head, since string) ([]string, error) {
	log := ctrl.LoggerFrom(ctx)
	entries, err := r.writer.Log(ctx, repo)
	if errors.Is(err, gitops.ErrBranchBusy) {
		return nil, outcome.Pending(reasonBranchBusy, err)
	}
	if err != nil {
		log.Info("Reading the branch's history to name a change made outside the operator failed", "error", err.Error())
		return nil, nil
	}
	start := slices.IndexFunc(entries, func(e gitops.LogEntry) bool { return e.Commit == head })
	if start < 0 {
		return nil, nil
	}
	var out []string
	for i := start + 1; i+1 < len(entries) && entries[i].Commit != since; i++ {
		if hasOwnTrailer(entries[i], s.app.UID) {
			continue
		}
		same, err := r.writer.SameFolder(ctx, repo, path, entries[i].Commit, entries[i+1].Commit)
		if errors.Is(err, gitops.ErrBranchBusy) {
			return nil, outcome.Pending(reasonBranchBusy, err)
		}
		if err != nil {
			log.Info("Comparing the app's folder across a commit failed", "commit", entries[i].Commit, "error", err.Error())
			return out, nil
		}
		if !same {
			out = append(out, entries[i].Commit)
		}
	}
	return out, nil
}

// hasOwnTrailer reports whether commit e carries a KubeOperaApp trailer of the app of uid.
func hasOwnTrailer(e gitops.LogEntry, uid types.UID) bool {
	return slices.ContainsFunc(e.Trailers, func(t string) bool {
		f, ok := parseAppTrailer(t)
		return ok && f.uid == string(uid)
	})
}

func shortCommits(commits []string) []string {
	out := make([]string, len(commits))
	for i, c := range commits {
		out[i] = shortCommit(c)
	}
	return out
}

// finishMove ends a move (a changed spec.git.path, url or branch) after Flux was re-pointed at
// the new folder (configureFlux): the old folder, inert now but accumulating, is removed from
// the old repository and branch with the push Secret recorded for the old placement (an SSH key
// for an old ssh:// URL, the old host's token), never with the new one. The move converges
// whatever the old repository says: credentials that are gone or refused there leave the old
// folder with a Warning Event (OldFolderLeft), AnnotationSkipGitCleanup leaves it on request
// (GitCleanupSkipped), a repository that is gone took it with it (GitRepositoryGone); other
// failures (the old host does not answer) are retried with the backoff, Flux already reading the
// new folder. Then the new placement is recorded. Without a move, the record follows a changed
// push Secret once the folder was written with it.
func (r *Reconciler) finishMove(ctx context.Context, s *scope) error {
	const cond = kubeoperav1alpha1.ConditionManifestsCommitted
	here, old := r.specLocation(s.app), recordedLocation(s.app)
	if old.path != "" && !old.sameFolder(here) {
		moved, err := r.removeOldFolder(ctx, s, old)
		if outcome.IsPending(err) {
			return err
		}
		// Like the new folder's (commitManifests), the removal's outcome is forgotten once the
		// status records the move; a failed removal was forgotten already (removeFolder).
		s.outcomesRead = append(s.outcomesRead, old.folder())
		if err != nil {
			return gitError(cond, fmt.Errorf("remove the old folder %s (branch %s of %s)%s: %w", old.path, old.branch, old.url,
				skipHint(s.app), err))
		}
		if moved.Changed && old.sameBranch(here) {
			// The head now; it holds the same files of the app as the commit Flux was asked for.
			s.head = moved.Commit
		}
		if !old.sameBranch(here) && r.repoUsers.leave(s.key, old) {
			if err := r.releaseRepo(old.branchKey()); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Release the local clone of the old repository")
			}
		}
	}
	return r.placeAt(ctx, s, here)
}

// removeOldFolder removes the folder of the old placement, unless the app says to leave it or
// the old credentials cannot remove it; see finishMove.
func (r *Reconciler) removeOldFolder(ctx context.Context, s *scope, old location) (gitops.Result, error) {
	if annotated(s.app, kubeoperav1alpha1.AnnotationSkipGitCleanup) {
		r.event(s.app, corev1.EventTypeWarning, "GitCleanupSkipped", actionReconcile,
			fmt.Sprintf("Old folder %s is left on branch %s of %s (annotation %s)", old.path, old.branch, old.url, kubeoperav1alpha1.AnnotationSkipGitCleanup))
		return gitops.Result{}, nil
	}
	res, err := r.removeFolder(ctx, s, old, "move")
	if credentialsUnusable(err) {
		msg := fmt.Sprintf("Old folder %s is left on branch %s of %s: the push Secret recorded for it (%q) cannot remove it: %v",
			old.path, old.branch, old.url, old.secret, err)
		r.event(s.app, corev1.EventTypeWarning, kubeoperav1alpha1.ReasonOldFolderLeft, actionReconcile, msg)
		// The pass's ManifestsCommitted says so too, until the next commit.
		const cond = kubeoperav1alpha1.ConditionManifestsCommitted
		if c := findCondition(s.app, cond); c != nil && c.Status == metav1.ConditionTrue {
			r.stepSucceeded(s.app, cond, c.Message+". "+msg)
		}
		return gitops.Result{}, nil
	}
	return res, err
}

// credentialsUnusable: err says the credentials are gone, are not Git credentials, or the
// server refused them; a retry with the same Secret cannot succeed. A 403 (gitops.ErrForbidden)
// is not among them: hosts answer it for a rate limit or an IP allow-list too, and a move that
// took one 403 for dead credentials would leave its old folder behind for good.
func credentialsUnusable(err error) bool {
	return errors.Is(err, errGitSecretNotFound) || errors.Is(err, errGitSecretInvalid) ||
		errors.Is(err, errGitInsecureTransport) || errors.Is(err, gitops.ErrNotGitCredential) ||
		errors.Is(err, gitops.ErrInvalidAuth) || errors.Is(err, gitops.ErrAuthFailed)
}

// skipHint tells, in a failure's message, how to leave the folder behind.
func skipHint(app *kubeoperav1alpha1.KubeOperaApp) string {
	return fmt.Sprintf(" (set annotation %s=true to leave it)%s", kubeoperav1alpha1.AnnotationSkipGitCleanup,
		annotationNotTrue(app, kubeoperav1alpha1.AnnotationSkipGitCleanup))
}

// submitManifests submits the app's folder to the Git writer unless the same content is
// already submitted, and returns the outcome once it is known, a hand-off (outcome.Pending) until
// then (see pushes.go). The caller forgets the outcome once it has read it: the next pass submits again,
// which re-verifies the folder (no commit when the branch already holds it).
func (r *Reconciler) submitManifests(ctx context.Context, s *scope, repo gitops.Repo, change gitops.Change) (gitops.Result, error) {
	fp, folder := fingerprint(repo, change), folderOf(repo, change)
	pending := r.pushes.submitted(s.key, folder, fp)
	if pending == nil {
		key := s.key
		p, err := r.writer.Submit(ctx, repo, change, func() { r.pushes.done(key) })
		if err != nil {
			return gitops.Result{}, err
		}
		r.pushes.record(s.key, folder, fp, p)
		pending = p
	}
	res, err := pending.Result()
	if errors.Is(err, gitops.ErrPending) {
		return gitops.Result{}, outcome.Pending(reasonPushPending, err)
	}
	return res, err
}

// owner is how the app is named in its folder's ownership marker, with the earlier UID it adopts
// (kubeopera.io/adopt-folder), if any.
func owner(app *kubeoperav1alpha1.KubeOperaApp) gitops.Owner {
	return gitops.Owner{ID: string(app.UID), Name: app.Namespace + "/" + app.Name,
		Adopts: strings.TrimSpace(app.Annotations[kubeoperav1alpha1.AnnotationAdoptFolder])}
}

// adoptionHint adds to a PathConflict with a folder of an app of the same namespace and name (but
// another UID) how this app takes it over, if it was its own: AnnotationAdoptFolder with that UID.
func adoptionHint(app *kubeoperav1alpha1.KubeOperaApp, err error) error {
	var conflict *gitops.ConflictError
	if !errors.As(err, &conflict) || conflict.Owner.Name != owner(app).Name {
		return err
	}
	return fmt.Errorf("%w (an app of this namespace and name with another UID: an earlier one, or one of another host cluster; "+
		"if the folder was this app's, set annotation %s=%s to take it over)", err, kubeoperav1alpha1.AnnotationAdoptFolder, conflict.Owner.ID)
}

// removeFolder removes the app's folder at loc with a commit. A folder that belongs to another
// app (this app was refused there) is not the app's to remove: nothing happens. A repository
// that no longer exists took the folder with it: success, with a Warning Event. The removal is
// submitted and the pass hands off (outcome.Pending) until it is pushed; the outcome of a success
// stays recorded (the caller forgets it) so that a pass removing two folders reads both.
func (r *Reconciler) removeFolder(ctx context.Context, s *scope, loc location, verb string) (gitops.Result, error) {
	repo, err := r.gitRepo(ctx, s, loc)
	if errors.Is(err, errGitHostNotAllowed) {
		// The operator never connects there, so it never wrote there either.
		r.event(s.app, corev1.EventTypeWarning, "GitCleanupSkipped", actionFor(s.app),
			fmt.Sprintf("Folder %s is not removed: %v", loc.path, err))
		return gitops.Result{}, nil
	}
	if err != nil {
		return gitops.Result{}, err
	}
	r.repoUsers.use(s.key, loc)
	change := gitops.Change{
		AppKey: s.key.String(), Path: loc.path, Owner: owner(s.app), Delete: true, Message: commitMessage(s.app, verb),
		Trailers: []string{appTrailer(s.app, "", "")},
	}
	// Submitted like the app's folder (pushes.go): the pass does not wait for the batch.
	res, err := r.submitManifests(ctx, s, repo, change)
	if outcome.IsPending(err) {
		return gitops.Result{}, err
	}
	if err != nil {
		// A failure is not kept: the next pass submits again.
		r.pushes.forgetFolder(s.key, folderOf(repo, change))
	}
	switch {
	case errors.Is(err, gitops.ErrPathConflict):
		ctrl.LoggerFrom(ctx).Info("Folder belongs to another app; leaving it", "path", loc.path, "reason", err.Error())
		return gitops.Result{}, nil
	case errors.Is(err, gitops.ErrInvalidChange), errors.Is(err, gitops.ErrInvalidPath):
		// A repository or folder the writer refuses never received a write of the app.
		ctrl.LoggerFrom(ctx).Info("Folder cannot have been written; nothing to remove", "path", loc.path, "reason", err.Error())
		return gitops.Result{}, nil
	case errors.Is(err, gitops.ErrRepositoryNotFound):
		r.event(s.app, corev1.EventTypeWarning, "GitRepositoryGone", actionFor(s.app),
			fmt.Sprintf("Repository of folder %s not found: nothing to remove", loc.path))
		return gitops.Result{}, nil
	case err != nil:
		return gitops.Result{}, err
	}
	if res.Changed {
		r.event(s.app, corev1.EventTypeNormal, "FolderRemoved", actionFor(s.app),
			fmt.Sprintf("Removed folder %s from branch %s in commit %s", loc.path, repo.Branch, shortCommit(res.Commit)))
	}
	return res, nil
}

// commitMessage names the app and its generation; the app's trailer (appTrailer) says the rest.
func commitMessage(app *kubeoperav1alpha1.KubeOperaApp, verb string) string {
	return fmt.Sprintf("kubeopera: %s %s/%s generation %d", verb, app.Namespace, app.Name, app.Generation)
}

// gitRepo returns the repository of loc with the credentials of loc's push Secret: the spec's
// spec.git.secretRef (read and checked once per pass: credentials.go), or the Secret recorded
// for an old placement, checked the same way.
func (r *Reconciler) gitRepo(ctx context.Context, s *scope, loc location) (gitops.Repo, error) {
	if err := r.checkGitHost(loc.url); err != nil {
		return gitops.Repo{}, err
	}
	var data map[string][]byte
	what := "spec.git.secretRef"
	if loc.secret == pushSecretName(s.app) {
		creds, err := r.credentials(ctx, s)
		if err != nil {
			return gitops.Repo{}, err
		}
		data = creds.push
	} else {
		what = fmt.Sprintf("the push Secret %q recorded for folder %s", loc.secret, loc.path)
		var ref *kubeoperav1alpha1.LocalSecretReference
		if loc.secret != "" {
			ref = &kubeoperav1alpha1.LocalSecretReference{Name: loc.secret}
		}
		secret, err := r.readGitSecret(ctx, s.app.Namespace, ref)
		if err != nil {
			return gitops.Repo{}, err
		}
		data = secret.Data
	}
	auth, err := r.gitAuth(loc.url, data, what)
	if err != nil {
		return gitops.Repo{}, err
	}
	return gitops.Repo{URL: loc.url, Branch: loc.branch, Auth: auth}, nil
}

// gitError maps a Git failure to its reason. Authentication gets its own reason (an expired
// token must not look like an outage); a bad path or change is not retried.
func gitError(cond string, err error) error {
	switch {
	case errors.Is(err, errGitSecretNotFound):
		return outcome.Retry(kubeoperav1alpha1.ReasonGitSecretNotFound, err).On(cond)
	case errors.Is(err, errGitSecretInvalid), errors.Is(err, gitops.ErrNotGitCredential):
		// The Secret watch brings the app back when the Secret is replaced.
		return outcome.Stop(kubeoperav1alpha1.ReasonGitSecretInvalid, err).On(cond)
	case errors.Is(err, errGitInsecureTransport):
		return outcome.Stop(kubeoperav1alpha1.ReasonGitInsecureTransport, err).On(cond)
	case errors.Is(err, errFluxSecretRefused):
		return outcome.Stop(kubeoperav1alpha1.ReasonFluxSecretRefused, err).On(cond)
	case errors.Is(err, errPushSecretExposed):
		return outcome.Stop(kubeoperav1alpha1.ReasonPushSecretExposed, err).On(cond)
	case errors.Is(err, errGitPathNotAllowed):
		return outcome.Stop(kubeoperav1alpha1.ReasonGitPathNotAllowed, err).On(cond)
	case errors.Is(err, errRepositoryShared):
		// The app that leaves the repository brings this one back (appsWaitingForTheRepository).
		return outcome.Stop(kubeoperav1alpha1.ReasonRepositoryShared, err).On(cond)
	case errors.Is(err, gitops.ErrFolderNotOwned):
		// Retried with the backoff: a person may remove the content; nothing is pushed.
		return outcome.Retry(kubeoperav1alpha1.ReasonFolderNotOwned, err).On(cond)
	case errors.Is(err, gitops.ErrAuthFailed), errors.Is(err, gitops.ErrInvalidAuth):
		return outcome.Retry(kubeoperav1alpha1.ReasonGitAuthFailed, err).On(cond)
	case errors.Is(err, gitops.ErrForbidden):
		// Not the credentials' fault for certain (credentialsUnusable leaves it out): retried.
		return outcome.Retry(kubeoperav1alpha1.ReasonGitForbidden, err).On(cond)
	case errors.Is(err, gitops.ErrPushConflict):
		return outcome.Retry(kubeoperav1alpha1.ReasonPushConflict, err).On(cond)
	case errors.Is(err, gitops.ErrRepositoryTooLarge):
		return outcome.Retry(kubeoperav1alpha1.ReasonRepositoryTooLarge, err).On(cond)
	case errors.Is(err, gitops.ErrBranchNotFound):
		// Retried with the backoff: someone may create the branch; the annotation brings the
		// app back at once.
		return outcome.Retry(kubeoperav1alpha1.ReasonGitBranchNotFound,
			fmt.Errorf("%w (set annotation %s=true to create it)", err, kubeoperav1alpha1.AnnotationCreateGitBranch)).On(cond)
	case errors.Is(err, gitops.ErrPathConflict):
		// Retried with the backoff: the other app may go away.
		return outcome.Retry(kubeoperav1alpha1.ReasonPathConflict, err).On(cond)
	case errors.Is(err, gitops.ErrInvalidPath), errors.Is(err, gitops.ErrInvalidChange):
		return outcome.Stop(kubeoperav1alpha1.ReasonGitFailed, err).On(cond)
	case errors.Is(err, errGitHostNotAllowed):
		return outcome.Stop(kubeoperav1alpha1.ReasonGitHostNotAllowed, err).On(cond)
	case apierrors.IsNotFound(err) || isAPIError(err):
		return err
	default:
		return outcome.Retry(kubeoperav1alpha1.ReasonGitFailed, err).On(cond)
	}
}
