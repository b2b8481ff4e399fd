package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// errGitSecretNotFound: the Secret named by spec.git.secretRef does not exist.
var errGitSecretNotFound = errors.New("git credentials Secret not found")

// commitManifests renders the app's folder and commits it. The Git writer groups the changes of
// apps reconciled at the same time into one commit and one push, and makes no commit when the
// files are unchanged.
func (r *Reconciler) commitManifests(ctx context.Context, s *scope) error {
	const cond = kubeoperav1alpha1.ConditionManifestsCommitted
	files, err := render.Manifests(s.app)
	if err != nil {
		return stop(cond, kubeoperav1alpha1.ReasonGitFailed, fmt.Errorf("render manifests: %w", err))
	}
	repo, err := r.gitRepo(ctx, s.app)
	if err != nil {
		return gitError(cond, err)
	}
	path := render.Path(s.app)
	start := time.Now()
	res, err := r.writer.Apply(ctx, repo, gitops.Change{
		AppKey:  s.key.String(),
		Path:    path,
		Files:   files,
		Message: commitMessage(s.app, "update"),
	})
	ctrl.LoggerFrom(ctx).V(1).Info("Git write done", "changed", res.Changed, "commit", res.Commit,
		"duration", time.Since(start), "error", err)
	if err != nil {
		return gitError(cond, err)
	}
	if old := s.app.Status.Path; old != "" && old != path {
		// spec.git.path changed: the old folder is inert (nothing points at it) but would
		// accumulate; remove it.
		moved, err := r.writer.Apply(ctx, repo, gitops.Change{
			AppKey: s.key.String(), Path: old, Delete: true, Message: commitMessage(s.app, "move"),
		})
		if err != nil {
			return gitError(cond, err)
		}
		if moved.Changed {
			res = moved
		}
	}
	s.app.Status.Path = path
	s.head = res.Commit
	// status.commit is the commit that last changed the app's folder: a later commit of
	// another app in the same repository does not replace it.
	if res.Changed || s.app.Status.Commit == "" {
		s.app.Status.Commit = res.Commit
	}
	if res.Changed {
		r.event(s.app, corev1.EventTypeNormal, "Committed", actionReconcile,
			fmt.Sprintf("Committed %s to branch %s at %s", shortCommit(res.Commit), repo.Branch, path))
	}
	r.setCondition(s.app, cond, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded,
		fmt.Sprintf("Commit %s on branch %s, folder %s", s.app.Status.Commit, repo.Branch, path))
	return nil
}

// commitMessage names the app and its generation (and UID, which tells a recreated app apart).
func commitMessage(app *kubeoperav1alpha1.KubeOperaApp, verb string) string {
	return fmt.Sprintf("kubeopera: %s %s/%s generation %d\n\nKubeOperaApp-UID: %s\n",
		verb, app.Namespace, app.Name, app.Generation, app.UID)
}

// gitRepo returns the repository coordinates with the credentials of spec.git.secretRef.
func (r *Reconciler) gitRepo(ctx context.Context, app *kubeoperav1alpha1.KubeOperaApp) (gitops.Repo, error) {
	data, err := r.gitSecretData(ctx, app)
	if err != nil {
		return gitops.Repo{}, err
	}
	auth, err := gitops.AuthFromSecretData(app.Spec.Git.URL, data)
	if err != nil {
		return gitops.Repo{}, err
	}
	return gitops.Repo{URL: app.Spec.Git.URL, Branch: render.Branch(app), Auth: auth}, nil
}

// gitSecretData reads the Git credentials Secret; nil data without a secretRef (anonymous).
func (r *Reconciler) gitSecretData(ctx context.Context, app *kubeoperav1alpha1.KubeOperaApp) (map[string][]byte, error) {
	if app.Spec.Git.SecretRef == nil || app.Spec.Git.SecretRef.Name == "" {
		return nil, nil
	}
	key := types.NamespacedName{Namespace: app.Namespace, Name: app.Spec.Git.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %q in namespace %q", errGitSecretNotFound, key.Name, key.Namespace)
		}
		return nil, fmt.Errorf("get Git credentials Secret: %w", err)
	}
	return secret.Data, nil
}

// gitError maps a Git failure to its reason. Authentication gets its own reason (an expired
// token must not look like an outage); a bad path or change is not retried.
func gitError(cond string, err error) error {
	switch {
	case errors.Is(err, errGitSecretNotFound):
		return retry(cond, kubeoperav1alpha1.ReasonGitSecretNotFound, err)
	case errors.Is(err, gitops.ErrAuthFailed), errors.Is(err, gitops.ErrInvalidAuth):
		return retry(cond, kubeoperav1alpha1.ReasonGitAuthFailed, err)
	case errors.Is(err, gitops.ErrPushConflict):
		return retry(cond, kubeoperav1alpha1.ReasonPushConflict, err)
	case errors.Is(err, gitops.ErrInvalidPath), errors.Is(err, gitops.ErrInvalidChange):
		return stop(cond, kubeoperav1alpha1.ReasonGitFailed, err)
	case apierrors.IsNotFound(err) || isAPIError(err):
		return err
	default:
		return retry(cond, kubeoperav1alpha1.ReasonGitFailed, err)
	}
}
