package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// One repository, one CloudSpace (docs/app-controller.md, "Tenancy model"). The read-only
// credential Flux fetches with reads the whole repository, the folders of every app in it: Flux's
// sparse checkout keeps other folders out of an app's artifact, not out of reach of a vCluster
// administrator who holds the credential. So, unless the operator runs with
// --app-allow-shared-repositories, a repository belongs to the CloudSpace of its oldest app on
// this host cluster, and an app of another CloudSpace that names it is refused with
// RepositoryShared before anything is read or written. The holder is the oldest app that has
// written to the repository (status.repository and status.path), or, while none has, the oldest
// app naming it (creation time, then namespace/name: creation times have whole seconds, so an
// app created in the same second as the one already placed must never displace it). The repository is
// recognised whatever form its URL takes (repositoryKey), and when the holding CloudSpace's apps
// leave it (deleted, or moved to another repository) the refused apps are brought back
// (appsWaitingForTheRepository). Apps on other host clusters writing to the same repository are
// not visible here: one repository per host cluster and CloudSpace is the platform's to keep.

// errRepositoryShared: the repository holds another CloudSpace's apps.
var errRepositoryShared = errors.New("the repository belongs to another CloudSpace")

// repositoryKey identifies a Git repository whatever way its URL is written: host (lower case,
// without port or credentials) and path (without a trailing "/" or ".git"); an scp-like SSH
// address ("git@host:org/repo.git") names the same repository as its ssh:// and https:// forms.
// A URL it cannot read is its own key.
func repositoryKey(raw string) string {
	host, p := "", ""
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		host, p = u.Hostname(), u.Path
	} else if before, after, ok := strings.Cut(raw, ":"); ok && !strings.Contains(before, "/") {
		_, h, found := strings.Cut(before, "@")
		if !found {
			h = before
		}
		host, p = h, after
	} else {
		return raw
	}
	p = strings.TrimSuffix(strings.Trim(p, "/"), ".git")
	return strings.ToLower(host) + "/" + strings.TrimSuffix(p, "/")
}

// repositoryHolder returns the app that holds the repository app names (see above) when it
// belongs to another CloudSpace, nil when the repository is the app's CloudSpace's (or only the
// app's).
func (r *Reconciler) repositoryHolder(ctx context.Context, app *kubeoperav1alpha1.KubeOperaApp) (*kubeoperav1alpha1.KubeOperaApp, error) {
	key := repositoryKey(app.Spec.Git.URL)
	list, err := r.appsOfRepository(ctx, app.Spec.Git.URL)
	if err != nil {
		return nil, err
	}
	wrote := func(a *kubeoperav1alpha1.KubeOperaApp) bool {
		return a.Status.Path != "" && repositoryKey(a.Status.Repository) == key
	}
	var oldest *kubeoperav1alpha1.KubeOperaApp
	for i := range list.Items {
		a := &list.Items[i]
		switch {
		case oldest == nil, wrote(a) && !wrote(oldest):
			oldest = a
		case wrote(a) == wrote(oldest) && createdBefore(a, oldest):
			oldest = a
		}
	}
	if oldest == nil || oldest.Spec.CloudSpaceID == app.Spec.CloudSpaceID {
		return nil, nil
	}
	return oldest, nil
}

// appsOfRepository lists, from the cache, the apps naming the repository of url in any form
// (index kubeopera.io/git-url, keyed by repositoryKey). The items are the cache's: read only.
func (r *Reconciler) appsOfRepository(ctx context.Context, url string) (*kubeoperav1alpha1.KubeOperaAppList, error) {
	list := &kubeoperav1alpha1.KubeOperaAppList{}
	if err := r.List(ctx, list, client.MatchingFields{indexGitURL: repositoryKey(url)}, readOnlyList); err != nil {
		return nil, fmt.Errorf("list the apps of repository %s: %w", url, err)
	}
	return list, nil
}

// createdBefore orders apps by creation time, then by namespace and name.
func createdBefore(a, b *kubeoperav1alpha1.KubeOperaApp) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// checkRepositoryHolder refuses an app whose repository belongs to another CloudSpace, unless
// shared repositories are allowed.
func (r *Reconciler) checkRepositoryHolder(ctx context.Context, app *kubeoperav1alpha1.KubeOperaApp) error {
	if r.Options.AllowSharedRepositories {
		return nil
	}
	holder, err := r.repositoryHolder(ctx, app)
	if err != nil || holder == nil {
		return err
	}
	return fmt.Errorf("%w: repository %s holds the folders of CloudSpace %q (app %s/%s), and the read-only credential Flux "+
		"fetches with reads the whole repository; give CloudSpace %q a repository of its own, or start the operator with "+
		"--app-allow-shared-repositories", errRepositoryShared, app.Spec.Git.URL, holder.Spec.CloudSpaceID, holder.Namespace,
		holder.Name, app.Spec.CloudSpaceID)
}

// appsWaitingForTheRepository maps an app that leaves its repository (deleted, being deleted,
// moved to another one, or of another CloudSpace now) to the apps of other CloudSpaces naming
// that repository, which RepositoryShared may have refused: their next pass decides again.
func (r *Reconciler) appsWaitingForTheRepository(ctx context.Context, obj client.Object) []reconcile.Request {
	app, ok := obj.(*kubeoperav1alpha1.KubeOperaApp)
	if !ok || r.Options.AllowSharedRepositories || app.Spec.Git.URL == "" {
		return nil
	}
	list, err := r.appsOfRepository(ctx, app.Spec.Git.URL)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the apps of a repository for an app event")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if other := &list.Items[i]; other.Spec.CloudSpaceID != app.Spec.CloudSpaceID {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(other)})
		}
	}
	return reqs
}

// leavesRepository passes the app events after which another CloudSpace may hold the
// repository: a deletion, the start of one, and a change of repository or CloudSpace.
var leavesRepository = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return true },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*kubeoperav1alpha1.KubeOperaApp)
		n, okNew := e.ObjectNew.(*kubeoperav1alpha1.KubeOperaApp)
		if !okOld || !okNew {
			return false
		}
		return repositoryKey(o.Spec.Git.URL) != repositoryKey(n.Spec.Git.URL) || o.Spec.CloudSpaceID != n.Spec.CloudSpaceID ||
			(o.DeletionTimestamp.IsZero() && !n.DeletionTimestamp.IsZero())
	},
}
