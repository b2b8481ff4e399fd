package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// Field indexes on KubeOperaApps, so that a changed Secret or Tenant finds its apps without a
// scan.
const (
	// indexSecretRefs: names of the host Secrets an app references (registry, Git).
	indexSecretRefs = "kubeopera.io/secret-refs" //nolint:gosec // G101: the name of a field index, not a credential
	// indexGitSecretRef: the name of the Secret an app pushes with (spec.git.secretRef), so that
	// a fluxSecretRef naming another app's push Secret is refused.
	indexGitSecretRef = "kubeopera.io/git-secret-ref" //nolint:gosec // G101: the name of a field index, not a credential
	// indexFluxSecretRef: the name of the Secret an app gives Flux (spec.git.fluxSecretRef), so
	// that an app that starts pushing with it brings that app back to delete its copy.
	indexFluxSecretRef = "kubeopera.io/flux-secret-ref" //nolint:gosec // G101: the name of a field index, not a credential
	// indexGitURL: the repository an app writes to (spec.git.url as written), so that the Flux
	// and push credentials of every app of a repository can be compared.
	indexGitURL = "kubeopera.io/git-url"
	// indexTenant: the Tenant an app is placed in (status.tenant), or asks for
	// (spec.tenantCRName), or cloudSpacePrefix+cloudSpaceId for an unplaced app resolved by
	// CloudSpace.
	indexTenant = "kubeopera.io/tenant"
)

// readOnlyList lists apps from the cache without copying them. Every list of apps by an index
// only reads the apps it finds (their names, Tenant, Secrets) and never changes them; copying
// each was most of the CPU the push-Secret guard and the event mappers spent when 200 apps of
// one namespace share a push Secret (make bench P4 CPU profile, 2026-12-05: 0.67 s of 5.2 s).
var readOnlyList = client.UnsafeDisableDeepCopy

// cloudSpacePrefix marks CloudSpace keys in indexTenant; Tenant names cannot contain ':'.
const cloudSpacePrefix = "cloudspace:"

// SetupWithManager registers the reconciler, its field indexes and its watches: KubeOperaApps
// (spec changes, annotation changes other than the placement record as a manual retry, deletion), the metadata of Secrets (the
// registry, Git and kubeconfig Secrets the apps reference; their data is read on demand and never
// cached) and, when the Tenant CRD is installed, Tenants (the changes tenantChanged passes on).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &kubeoperav1alpha1.KubeOperaApp{}, indexSecretRefs, secretRefs); err != nil {
		return fmt.Errorf("index %s: %w", indexSecretRefs, err)
	}
	if err := indexer.IndexField(ctx, &kubeoperav1alpha1.KubeOperaApp{}, indexGitSecretRef, gitSecretRef); err != nil {
		return fmt.Errorf("index %s: %w", indexGitSecretRef, err)
	}
	if err := indexer.IndexField(ctx, &kubeoperav1alpha1.KubeOperaApp{}, indexFluxSecretRef, fluxSecretRef); err != nil {
		return fmt.Errorf("index %s: %w", indexFluxSecretRef, err)
	}
	if err := indexer.IndexField(ctx, &kubeoperav1alpha1.KubeOperaApp{}, indexGitURL, gitURL); err != nil {
		return fmt.Errorf("index %s: %w", indexGitURL, err)
	}
	if err := indexer.IndexField(ctx, &kubeoperav1alpha1.KubeOperaApp{}, indexTenant, tenantKeys); err != nil {
		return fmt.Errorf("index %s: %w", indexTenant, err)
	}

	b := ctrl.NewControllerManagedBy(mgr).
		For(&kubeoperav1alpha1.KubeOperaApp{}, builder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, userAnnotationChanged),
			r.announceChange())).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.appsForSecret),
			builder.WithPredicates(notOnlyTheHold)).
		// An app that names a Secret as its push Secret brings back the apps that give that
		// Secret to Flux: their next pass refuses it and deletes the copy.
		Watches(&kubeoperav1alpha1.KubeOperaApp{}, handler.EnqueueRequestsFromMapFunc(r.forgetting(r.appsGivingFluxThePushSecret))).
		// An app that leaves its repository brings back the other CloudSpaces' apps refused
		// there (RepositoryShared).
		Watches(&kubeoperav1alpha1.KubeOperaApp{}, handler.EnqueueRequestsFromMapFunc(r.forgetting(r.appsWaitingForTheRepository)),
			builder.WithPredicates(leavesRepository)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: r.Options.MaxConcurrentReconciles,
			RateLimiter:             pendingAwareLimiter{TypedRateLimiter: newRateLimiter(r.Options), pushes: r.pushes},
		}).
		// The Git writer's callbacks add apps whose push is done (pushes.go).
		WatchesRawSource(source.Func(r.pushes.start)).
		Named("kubeoperaapp")
	if err := r.setupSecretGuard(mgr); err != nil {
		return fmt.Errorf("guard push Secrets: %w", err)
	}
	b, err := r.setupVClusterWatches(mgr, b)
	if err != nil {
		return fmt.Errorf("watch the vClusters: %w", err)
	}

	served, err := r.tenantAPI.served()
	if err != nil {
		return err
	}
	if served {
		b = b.Watches(&tenantv1alpha1.Tenant{}, handler.EnqueueRequestsFromMapFunc(r.appsForTenant),
			builder.WithPredicates(tenantChanged))
		r.tenantAPI.watched.Store(true)
	} else {
		mgr.GetLogger().Info("Tenant CRD not installed: Tenants are not watched; apps report TenantAPIUnavailable until it is",
			"controller", "kubeoperaapp")
	}
	return b.Complete(r)
}

func secretRefs(obj client.Object) []string {
	app, ok := obj.(*kubeoperav1alpha1.KubeOperaApp)
	if !ok {
		return nil
	}
	var names []string
	if app.Spec.Registry != nil && app.Spec.Registry.SecretRef.Name != "" {
		names = append(names, app.Spec.Registry.SecretRef.Name)
	}
	if app.Spec.Git.SecretRef != nil && app.Spec.Git.SecretRef.Name != "" {
		names = append(names, app.Spec.Git.SecretRef.Name)
	}
	if app.Spec.Git.FluxSecretRef != nil && app.Spec.Git.FluxSecretRef.Name != "" {
		names = append(names, app.Spec.Git.FluxSecretRef.Name)
	}
	return names
}

func fluxSecretRef(obj client.Object) []string {
	app, ok := obj.(*kubeoperav1alpha1.KubeOperaApp)
	if !ok || app.Spec.Git.FluxSecretRef == nil || app.Spec.Git.FluxSecretRef.Name == "" {
		return nil
	}
	return []string{app.Spec.Git.FluxSecretRef.Name}
}

// appsGivingFluxThePushSecret maps an app to the apps of its namespace whose
// spec.git.fluxSecretRef is a Secret the app pushes with.
// The app itself is left out: its own events reach it through For.
func (r *Reconciler) appsGivingFluxThePushSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	reqs := r.appsByIndex(ctx, obj.GetNamespace(), indexFluxSecretRef, gitSecretRef(obj)...)
	return slices.DeleteFunc(reqs, func(req reconcile.Request) bool { return req.Name == obj.GetName() })
}

func gitURL(obj client.Object) []string {
	app, ok := obj.(*kubeoperav1alpha1.KubeOperaApp)
	if !ok || app.Spec.Git.URL == "" {
		return nil
	}
	return []string{repositoryKey(app.Spec.Git.URL)}
}

func tenantKeys(obj client.Object) []string {
	app, ok := obj.(*kubeoperav1alpha1.KubeOperaApp)
	if !ok {
		return nil
	}
	switch {
	case app.Status.Tenant != nil && app.Status.Tenant.Name != "":
		return []string{app.Status.Tenant.Name}
	case app.Spec.TenantCRName != "":
		return []string{app.Spec.TenantCRName}
	default:
		return []string{cloudSpacePrefix + app.Spec.CloudSpaceID}
	}
}

// appsForTenant maps a Tenant to the apps placed in it or waiting for it.
func (r *Reconciler) appsForTenant(ctx context.Context, obj client.Object) []reconcile.Request {
	keys := []string{obj.GetName()}
	if cs := obj.GetLabels()[tenantv1alpha1.CloudSpaceLabel]; cs != "" {
		keys = append(keys, cloudSpacePrefix+cs)
	}
	return r.appsByIndex(ctx, obj.GetNamespace(), indexTenant, keys...)
}

// appsForSecret maps a Secret to the apps referencing it: directly (registry, Git), or as the
// kubeconfig Secret of their Tenant (vc-<tenant> or a Tenant's status.kubeconfigSecretRef).
func (r *Reconciler) appsForSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	ns, name := obj.GetNamespace(), obj.GetName()
	reqs := r.appsByIndex(ctx, ns, indexSecretRefs, name)
	var tenants []string
	if t, ok := strings.CutPrefix(name, tenant.SecretPrefix); ok {
		tenants = append(tenants, t)
	}
	if r.tenantAPI.watched.Load() {
		list := &tenantv1alpha1.TenantList{}
		if err := r.List(ctx, list, client.InNamespace(ns)); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List Tenants for a Secret event")
		}
		for i := range list.Items {
			if ref := list.Items[i].Status.KubeconfigSecretRef; ref != nil && ref.Name == name {
				tenants = append(tenants, list.Items[i].Name)
			}
		}
	}
	if len(tenants) > 0 {
		reqs = append(reqs, r.appsByIndex(ctx, ns, indexTenant, tenants...)...)
	}
	return dedupe(reqs)
}

func (r *Reconciler) appsByIndex(ctx context.Context, ns, index string, values ...string) []reconcile.Request {
	var reqs []reconcile.Request
	for _, v := range values {
		apps := &kubeoperav1alpha1.KubeOperaAppList{}
		if err := r.List(ctx, apps, client.InNamespace(ns), client.MatchingFields{index: v}, readOnlyList); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List apps by index", "index", index)
			continue
		}
		for i := range apps.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{
				Namespace: apps.Items[i].Namespace, Name: apps.Items[i].Name,
			}})
		}
	}
	return reqs
}

func dedupe(reqs []reconcile.Request) []reconcile.Request {
	seen := make(map[reconcile.Request]bool, len(reqs))
	out := reqs[:0]
	for _, r := range reqs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// gitSecretRef indexes the Secrets an app pushes with: spec.git.secretRef and the push Secret
// recorded for its placement (the old one, during a move).
func gitSecretRef(obj client.Object) []string {
	app, ok := obj.(*kubeoperav1alpha1.KubeOperaApp)
	if !ok {
		return nil
	}
	var names []string
	if n := pushSecretName(app); n != "" {
		names = append(names, n)
	}
	if p, ok := annotatedPlacement(app); ok && p.SecretName != "" && p.SecretName != pushSecretName(app) {
		names = append(names, p.SecretName)
	}
	return names
}
