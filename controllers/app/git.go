package app

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// errGitSecretNotFound: the Secret named by spec.git.secretRef does not exist.
var errGitSecretNotFound = errors.New("git credentials Secret not found")

// commitManifests renders the app's folder and commits it. The Git writer groups the changes of
// apps reconciled at the same time into one commit and one push, makes no commit when the files
// are unchanged, and refuses a folder that overlaps another app's (PathConflict). When the
// folder moved (path, URL or branch changed), the old folder is removed from the old repository
// and branch once the new one is written; status keeps the old placement until then.
func (r *Reconciler) commitManifests(ctx context.Context, s *scope) error {
	const cond = kubeoperav1alpha1.ConditionManifestsCommitted
	files, err := render.Manifests(s.app)
	if err != nil {
		return stop(cond, kubeoperav1alpha1.ReasonGitFailed, fmt.Errorf("render manifests: %w", err))
	}
	here := specLocation(s.app)
	repo, err := r.gitRepo(ctx, s, here)
	if err != nil {
		return gitError(cond, err)
	}
	r.repoUsers.use(s.key, here)
	change := gitops.Change{
		AppKey:  s.key.String(),
		Path:    here.path,
		Owner:   owner(s.app),
		Files:   files,
		Message: commitMessage(s.app, "update"),
	}
	res, err := r.submitManifests(ctx, s, repo, change)
	if errors.Is(err, errPushPending) {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Git write done", "changed", res.Changed, "commit", res.Commit, "error", err)
	if err != nil {
		return gitError(cond, err)
	}
	if old := statusLocation(s.app); old.path != "" && old != here {
		// The folder moved: the old one is inert (nothing points at it) but would accumulate.
		moved, err := r.removeFolder(ctx, s, old, "move")
		if err != nil {
			return gitError(cond, err)
		}
		if moved.Changed && old.sameBranch(here) {
			res = moved
		}
		if !old.sameBranch(here) && r.repoUsers.leave(s.key, old) {
			if err := r.releaseRepo(old.branchKey()); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Release the local clone of the old repository")
			}
		}
	}
	s.app.Status.Path, s.app.Status.Repository, s.app.Status.Branch = here.path, here.url, here.branch
	s.head = res.Commit
	// status.commit is the commit that last changed the app's folder: a later commit of
	// another app in the same repository does not replace it.
	if res.Changed || s.app.Status.Commit == "" {
		s.app.Status.Commit = res.Commit
	}
	if res.Changed {
		r.event(s.app, corev1.EventTypeNormal, "Committed", actionReconcile,
			fmt.Sprintf("Committed %s to branch %s at %s", shortCommit(res.Commit), repo.Branch, here.path))
	}
	r.stepSucceeded(s.app, cond, fmt.Sprintf("Commit %s on branch %s, folder %s", s.app.Status.Commit, repo.Branch, here.path))
	return nil
}

// submitManifests submits the app's folder to the Git writer unless the same content is
// already submitted, and returns the outcome once it is known, errPushPending until then (see
// pushes.go). The outcome is read once: the next pass submits again, which re-verifies the
// folder (no commit when the branch already holds it).
func (r *Reconciler) submitManifests(ctx context.Context, s *scope, repo gitops.Repo, change gitops.Change) (gitops.Result, error) {
	fp := fingerprint(repo, change)
	pending := r.pushes.submitted(s.key, fp)
	if pending == nil {
		key := s.key
		p, err := r.writer.Submit(ctx, repo, change, func() { r.pushes.done(key) })
		if err != nil {
			return gitops.Result{}, err
		}
		r.pushes.record(s.key, fp, p)
		pending = p
	}
	res, err := pending.Result()
	if errors.Is(err, gitops.ErrPending) {
		return gitops.Result{}, errPushPending
	}
	r.pushes.forget(s.key)
	return res, err
}

// location is where an app's folder is: repository, branch and path.
type location struct{ url, branch, path string }

func (l location) sameBranch(o location) bool { return l.url == o.url && l.branch == o.branch }

// specLocation is the folder the current spec asks for.
func specLocation(app *kubeoperav1alpha1.KubeOperaApp) location {
	return location{url: app.Spec.Git.URL, branch: render.Branch(app), path: render.Path(app)}
}

// statusLocation is the recorded placement of the folder (path "" when none). Status written
// before repository and branch were recorded means the spec's.
func statusLocation(app *kubeoperav1alpha1.KubeOperaApp) location {
	l := location{url: app.Status.Repository, branch: app.Status.Branch, path: app.Status.Path}
	if l.url == "" {
		l.url = app.Spec.Git.URL
	}
	if l.branch == "" {
		l.branch = render.Branch(app)
	}
	return l
}

// owner is how the app is named in its folder's ownership marker.
func owner(app *kubeoperav1alpha1.KubeOperaApp) gitops.Owner {
	return gitops.Owner{ID: string(app.UID), Name: app.Namespace + "/" + app.Name}
}

// removeFolder removes the app's folder at loc with a commit. A folder that belongs to another
// app (this app was refused there) is not the app's to remove: nothing happens. A repository
// that no longer exists took the folder with it: success, with a Warning Event.
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
	res, err := r.writer.Apply(ctx, repo, gitops.Change{
		AppKey: s.key.String(), Path: loc.path, Owner: owner(s.app), Delete: true, Message: commitMessage(s.app, verb),
	})
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

// commitMessage names the app and its generation (and UID, which tells a recreated app apart).
func commitMessage(app *kubeoperav1alpha1.KubeOperaApp, verb string) string {
	return fmt.Sprintf("kubeopera: %s %s/%s generation %d\n\nKubeOperaApp-UID: %s\n",
		verb, app.Namespace, app.Name, app.Generation, app.UID)
}

// gitRepo returns the repository of loc with the credentials of spec.git.secretRef (checked:
// credentials.go).
func (r *Reconciler) gitRepo(ctx context.Context, s *scope, loc location) (gitops.Repo, error) {
	if err := r.checkGitHost(loc.url); err != nil {
		return gitops.Repo{}, err
	}
	creds, err := r.credentials(ctx, s)
	if err != nil {
		return gitops.Repo{}, err
	}
	auth, err := r.gitAuth(loc.url, creds.push, "spec.git.secretRef")
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
		return retry(cond, kubeoperav1alpha1.ReasonGitSecretNotFound, err)
	case errors.Is(err, errGitSecretInvalid), errors.Is(err, gitops.ErrNotGitCredential):
		// The Secret watch brings the app back when the Secret is replaced.
		return stop(cond, kubeoperav1alpha1.ReasonGitSecretInvalid, err)
	case errors.Is(err, errGitInsecureTransport):
		return stop(cond, kubeoperav1alpha1.ReasonGitInsecureTransport, err)
	case errors.Is(err, errFluxSecretRefused):
		return stop(cond, kubeoperav1alpha1.ReasonFluxSecretRefused, err)
	case errors.Is(err, errGitPathNotAllowed):
		return stop(cond, kubeoperav1alpha1.ReasonGitPathNotAllowed, err)
	case errors.Is(err, gitops.ErrFolderNotOwned):
		// Retried with the backoff: a person may remove the content; nothing is pushed.
		return retry(cond, kubeoperav1alpha1.ReasonFolderNotOwned, err)
	case errors.Is(err, gitops.ErrAuthFailed), errors.Is(err, gitops.ErrInvalidAuth):
		return retry(cond, kubeoperav1alpha1.ReasonGitAuthFailed, err)
	case errors.Is(err, gitops.ErrPushConflict):
		return retry(cond, kubeoperav1alpha1.ReasonPushConflict, err)
	case errors.Is(err, gitops.ErrRepositoryTooLarge):
		return retry(cond, kubeoperav1alpha1.ReasonRepositoryTooLarge, err)
	case errors.Is(err, gitops.ErrPathConflict):
		// Retried with the backoff: the other app may go away.
		return retry(cond, kubeoperav1alpha1.ReasonPathConflict, err)
	case errors.Is(err, gitops.ErrInvalidPath), errors.Is(err, gitops.ErrInvalidChange):
		return stop(cond, kubeoperav1alpha1.ReasonGitFailed, err)
	case errors.Is(err, errGitHostNotAllowed):
		return stop(cond, kubeoperav1alpha1.ReasonGitHostNotAllowed, err)
	case apierrors.IsNotFound(err) || isAPIError(err):
		return err
	default:
		return retry(cond, kubeoperav1alpha1.ReasonGitFailed, err)
	}
}
