package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// reconcileDelete cleans up behind the finalizer, in order:
//  1. in the vCluster: delete the Kustomization and wait until it is gone (Flux prunes the
//     Deployment, Service and Ingress it applied, as the app's ServiceAccount), then the
//     GitRepository, the ServiceAccount with its Role and RoleBinding, the copied Git credentials
//     and the copied registry Secret (unless another app in the namespace uses it); only objects
//     with the operator's managed-by label, never a tenant's object of the same name;
//  2. in Git: remove the app's folder with a commit, at its recorded placement and at the
//     spec's (a pass may have died in the middle of a move); a folder owned by another app is
//     never touched, a repository that is gone counts as done (Warning Event);
//  3. remove the finalizer.
//
// Every piece already missing counts as done, so a retry after a partial cleanup cannot get
// stuck. When the Tenant is gone there is nothing left to clean in its vCluster (the vCluster
// goes with it): step 1 is skipped with an Event. A Tenant being deleted is cleaned through while
// its vCluster answers. Whenever the operator cannot reach a vCluster the app was placed in (the
// Tenant API is not served, the server left --app-allowed-vcluster-servers, the vCluster does not
// answer), the finalizer stays, with DeleteFailed saying what is needed: what Flux applied there
// runs until its Kustomization goes. When the Git credentials Secret is gone, the
// folder cannot be removed: step 2 is skipped with a Warning Event (deleting a namespace deletes
// the Secret together with the app). Any other failure is retried with the backoff, also a
// Kustomization Flux does not finish deleting (KustomizationStuck after the timeout): the app
// is kept while its workload may still run. The annotations AnnotationAbandonKustomization and
// AnnotationSkipGitCleanup are an administrator's explicit way out, each with a Warning Event.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.app, kubeoperav1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	done, err := r.cleanupVCluster(ctx, s)
	if err != nil {
		return r.failed(ctx, s, err)
	}
	if !done {
		return r.deleteWait(s.app), nil
	}
	if err := r.cleanupGit(ctx, s); err != nil {
		return r.failed(ctx, s, err)
	}
	patch := client.MergeFromWithOptions(s.app.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(s.app, kubeoperav1alpha1.Finalizer)
	// NotFound: an earlier pass removed the finalizer and this one ran on the cache's stale copy
	// (its cleanup found everything done, but may have built the vCluster client again and
	// registered the app's branch again): the app is gone all the same.
	if err := r.Patch(ctx, s.app, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("remove finalizer: %w", err)
	}
	s.versions.Wrote(s.app)
	r.forgetUnusedTenantClient(ctx, s)
	r.leaveRepositories(ctx, s.key)
	ctrl.LoggerFrom(ctx).Info("Cleanup finished, finalizer removed")
	return ctrl.Result{}, nil
}

// deleteFailed is the step error of a failed cleanup: reason DeleteFailed, retried with backoff.
func deleteFailed(what string, err error) error {
	return outcome.Retry(kubeoperav1alpha1.ReasonDeleteFailed, fmt.Errorf("%s: %w", what, err)).On(kubeoperav1alpha1.ConditionReady)
}

// cleanupVCluster removes the app's objects from its vCluster. It returns false while the
// Kustomization still exists (Flux is pruning).
func (r *Reconciler) cleanupVCluster(ctx context.Context, s *scope) (bool, error) {
	ref := s.app.Status.Tenant
	if ref == nil || !placed(s.app) {
		return true, nil // never placed: nothing in any vCluster
	}
	reader, err := r.tenantReader()
	if errors.Is(err, errTenantAPIUnavailable) {
		// The app was placed, so its workload may still run there; without the Tenant there is
		// no kubeconfig to reach it with.
		return r.vclusterCleanupFailed(s, "find Tenant "+ref.Name, err)
	}
	if err != nil {
		return false, err
	}
	t, err := tenant.Get(ctx, reader, s.app.Namespace, ref.Name)
	if errors.Is(err, tenant.ErrNotFound) {
		r.clients.Forget(types.NamespacedName{Namespace: s.app.Namespace, Name: ref.Name})
		r.vclusterWatches.forget(types.NamespacedName{Namespace: s.app.Namespace, Name: ref.Name})
		r.event(s.app, corev1.EventTypeWarning, "TenantGone", actionDelete,
			fmt.Sprintf("Tenant %s is gone, and its vCluster with it: nothing to clean there; removing the Git folder only", ref.Name))
		return true, nil
	}
	if err != nil {
		return false, err
	}
	vc, _, err := r.vclusterClient(ctx, t)
	if errors.Is(err, errVClusterServerNotAllowed) || errors.Is(err, tenant.ErrKubeconfigInvalid) {
		// The app was placed there: the allow-list changed since, or the kubeconfig did. The
		// operator does not connect where it may not, and does not pretend nothing runs there.
		return r.vclusterCleanupFailed(s, "reach the vCluster", err)
	}
	if err != nil {
		return false, err
	}

	// Only objects with the operator's label are deleted or waited for: one of the same name the
	// tenant created (the app was refused with VClusterObjectNotOwned) is left alone.
	fluxNS, name := render.FluxNamespace(s.app), render.FluxName(s.app)
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: name}}
	if err := deleteIfManaged(ctx, vc, ks); err != nil {
		return r.vclusterCleanupFailed(s, "delete Kustomization "+fluxNS+"/"+name, err)
	}
	err = vc.Get(ctx, client.ObjectKeyFromObject(ks), ks)
	switch {
	case err == nil && !managed(ks):
		// The tenant's own: nothing of the app's to wait for.
	case err == nil && annotated(s.app, kubeoperav1alpha1.AnnotationAbandonKustomization):
		r.event(s.app, corev1.EventTypeWarning, "KustomizationAbandoned", actionDelete,
			fmt.Sprintf("Not waiting for Kustomization %s/%s any more (annotation %s): what it applied runs until Flux prunes it",
				fluxNS, name, kubeoperav1alpha1.AnnotationAbandonKustomization))
	case err == nil:
		r.setKustomizationDeleting(s.app, ks)
		return false, nil
	case ignoreGone(err) != nil:
		return r.vclusterCleanupFailed(s, "read Kustomization "+fluxNS+"/"+name, err)
	}
	// The Kustomization is gone: kustomize-controller pruned as the app's ServiceAccount, which
	// goes only now (without it, Flux would skip the pruning).
	for _, obj := range []client.Object{
		&sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: name}},
		render.FluxRoleBinding(s.app), render.FluxRole(s.app), render.FluxServiceAccount(s.app),
	} {
		if err := deleteIfManaged(ctx, vc, obj); err != nil {
			return r.vclusterCleanupFailed(s, fmt.Sprintf("delete %s %s", scheme.KindOf(obj), client.ObjectKeyFromObject(obj)), err)
		}
	}
	gitSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: render.GitSecretName(s.app)}}
	if err := deleteIfManaged(ctx, vc, gitSecret); err != nil {
		return r.vclusterCleanupFailed(s, "delete the copied Git credentials", err)
	}
	if err := r.deleteRegistrySecret(ctx, s, vc); err != nil {
		return false, err
	}
	return true, nil
}

// vclusterCleanupFailed reports a vCluster cleanup step that failed (the vCluster does not
// answer, its kubeconfig is unusable, it refused the request): retried with the backoff
// (DeleteFailed), since the workload may still run there. The Tenant exists, so the vCluster may
// come back; when it will not, AnnotationAbandonKustomization "true" is the administrator's way
// out here too: the cleanup goes on without the vCluster, with a Warning Event
// (VClusterCleanupAbandoned).
func (r *Reconciler) vclusterCleanupFailed(s *scope, what string, err error) (bool, error) {
	const key = kubeoperav1alpha1.AnnotationAbandonKustomization
	if annotated(s.app, key) {
		r.event(s.app, corev1.EventTypeWarning, kubeoperav1alpha1.ReasonVClusterCleanupAbandoned, actionDelete,
			fmt.Sprintf("Not cleaning the vCluster of Tenant %s (annotation %s): %s failed: %v; what Flux applied there may still run",
				s.app.Status.Tenant.Name, key, what, err))
		return true, nil
	}
	return false, deleteFailed(fmt.Sprintf("%s (set annotation %s=true to go on without cleaning the vCluster%s)",
		what, key, annotationNotTrue(s.app, key)), err)
}

// deleteRegistrySecret deletes the copies of pull Secrets the app made (spec.registry and
// status.registrySecret).
func (r *Reconciler) deleteRegistrySecret(ctx context.Context, s *scope, vc client.Client) error {
	for _, name := range registrySecretNames(s.app) {
		if err := r.deleteRegistryCopy(ctx, s, vc, name); err != nil {
			return err
		}
	}
	return nil
}

// registrySecretNames are the pull Secrets the app references or copied.
func registrySecretNames(app *kubeoperav1alpha1.KubeOperaApp) []string {
	var names []string
	if app.Spec.Registry != nil && app.Spec.Registry.SecretRef.Name != "" {
		names = append(names, app.Spec.Registry.SecretRef.Name)
	}
	if n := app.Status.RegistrySecret; n != "" && (len(names) == 0 || names[0] != n) {
		names = append(names, n)
	}
	return names
}

// deleteRegistryCopy deletes the copied pull Secret name unless another live app of the same
// vCluster namespace uses it. The app namespace itself is left in place: it may hold objects the
// tenant created there (Secrets for env valueFrom, volumes), and it is empty of everything the
// operator and Flux put there.
func (r *Reconciler) deleteRegistryCopy(ctx context.Context, s *scope, vc client.Client, name string) error {
	apps := &kubeoperav1alpha1.KubeOperaAppList{}
	if err := r.List(ctx, apps, client.InNamespace(s.app.Namespace), readOnlyList); err != nil {
		return fmt.Errorf("list apps: %w", err)
	}
	for i := range apps.Items {
		other := &apps.Items[i]
		if other.UID == s.app.UID || !other.DeletionTimestamp.IsZero() || other.Status.Tenant == nil ||
			other.Status.Tenant.Name != s.app.Status.Tenant.Name || render.TargetNamespace(other) != render.TargetNamespace(s.app) {
			continue
		}
		if slices.Contains(registrySecretNames(other), name) {
			return nil // still used
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: render.TargetNamespace(s.app), Name: name}}
	if err := deleteIfManaged(ctx, vc, secret); err != nil {
		return deleteFailed("delete the copied registry Secret", err)
	}
	return nil
}

// cleanupGit removes the app's folder from the repository with a commit: at the recorded
// placement and, when it differs, at the spec's.
func (r *Reconciler) cleanupGit(ctx context.Context, s *scope) error {
	if !placed(s.app) {
		return nil // never placed: nothing in Git
	}
	if annotated(s.app, kubeoperav1alpha1.AnnotationSkipGitCleanup) {
		r.event(s.app, corev1.EventTypeWarning, "GitCleanupSkipped", actionDelete,
			fmt.Sprintf("Folder %s is left in Git (annotation %s)", s.app.Status.Path, kubeoperav1alpha1.AnnotationSkipGitCleanup))
		return nil
	}
	// The recorded folder with the push Secret recorded for it, and the spec's with the spec's.
	locs := []location{recordedLocation(s.app)}
	if here := r.specLocation(s.app); !here.sameFolder(locs[0]) {
		locs = append(locs, here)
	}
	var pending error
	for _, loc := range locs {
		_, err := r.removeFolder(ctx, s, loc, "delete")
		if outcome.IsPending(err) {
			pending = err
			continue
		}
		if errors.Is(err, errGitSecretNotFound) {
			r.event(s.app, corev1.EventTypeWarning, "GitCleanupSkipped", actionDelete,
				fmt.Sprintf("Cannot remove folder %s from Git: %v", loc.path, err))
			continue
		}
		if err != nil {
			return deleteFailed("remove folder "+loc.path+" from Git"+annotationNotTrue(s.app, kubeoperav1alpha1.AnnotationSkipGitCleanup), err)
		}
	}
	if pending != nil {
		return pending
	}
	// Every removal read: none is submitted again.
	r.pushes.forget(s.key)
	return nil
}

// placed reports whether anything of the app may have been written to Git or to the vCluster.
// recordPlacement persists status.path right before the first write of the first pass that
// gets that far, so an app refused earlier (no Tenant, a bad kubeconfig, a refused pull Secret, a
// vCluster that does not answer) has none and its deletion contacts nothing. status.tenant alone
// is not enough: it is pinned as soon as the Tenant is found.
func placed(app *kubeoperav1alpha1.KubeOperaApp) bool {
	return app.Status.Path != ""
}

// annotated reports whether the app carries the annotation with value "true".
func annotated(app *kubeoperav1alpha1.KubeOperaApp, key string) bool {
	return app.Annotations[key] == "true"
}

// forgetUnusedTenantClient drops the cached vCluster client of the app's Tenant when no other
// app is placed in it (the cache would otherwise keep a client per Tenant ever used).
func (r *Reconciler) forgetUnusedTenantClient(ctx context.Context, s *scope) {
	if ref := s.app.Status.Tenant; ref != nil {
		r.forgetTenantClientIfUnused(ctx, types.NamespacedName{Namespace: s.app.Namespace, Name: ref.Name}, s.app.UID)
	}
}

// forgetClientsOfGoneApp drops the cached vCluster clients of namespace's Tenants that no app
// uses once an app of it is gone. An app deleted before its first pass added the finalizer (a
// pass that built its Tenant's client and ended, refused, before anything was written) goes
// without a deletion pass, and its Tenant's client would otherwise stay.
func (r *Reconciler) forgetClientsOfGoneApp(ctx context.Context, namespace string) {
	for _, t := range r.clients.Tenants(namespace) {
		r.forgetTenantClientIfUnused(ctx, t, "")
	}
}

// forgetTenantClientIfUnused drops the cached client (and the watches) of Tenant t unless an
// app other than except (none when empty), not being deleted, is placed in it or asks for it.
func (r *Reconciler) forgetTenantClientIfUnused(ctx context.Context, t types.NamespacedName, except types.UID) {
	apps := &kubeoperav1alpha1.KubeOperaAppList{}
	if err := r.List(ctx, apps, client.InNamespace(t.Namespace), client.MatchingFields{indexTenant: t.Name}, readOnlyList); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the apps of a Tenant")
		return
	}
	for i := range apps.Items {
		// Apps being deleted do not count: one that still needs the client builds it again.
		if a := &apps.Items[i]; (except == "" || a.UID != except) && a.DeletionTimestamp.IsZero() {
			return
		}
	}
	r.clients.Forget(t)
	r.vclusterWatches.forget(t)
}
