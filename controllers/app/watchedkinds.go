package app

import (
	"context"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// watchedKind is one kind of object watched in every vCluster (tenantwatch.go).
type watchedKind struct {
	// name is the kind, for logs and WatchesVClusterKind.
	name string
	// object returns an empty object of the kind (typed, or unstructured with its kind set).
	object func() client.Object
	// selector restricts the cache to these objects; nil: every object of the kind.
	selector labels.Selector
	// filter makes the eventFilter of one cache of the kind: which of its events are worth a
	// pass.
	filter func() eventFilter
	// appsOf lists the apps placed in Tenant t that obj belongs to.
	appsOf func(ctx context.Context, t types.NamespacedName, obj client.Object) []types.NamespacedName
	// optional: the kind's CRD may never be installed in a vCluster (cert-manager is not
	// required): that it is not served is no error.
	optional bool
}

// watchedKinds are the objects whose status decides Synced: the app's Kustomization and Ingress,
// selected by the operator's managed-by label (Flux applies the label the operator renders), so
// a vCluster's other objects are neither listed nor cached; and cert-manager's Certificates,
// which cert-manager creates without it, matched to the app by their Secret.
func (r *Reconciler) watchedKinds() []watchedKind {
	managedBy := labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedBy})
	return []watchedKind{{
		name:     "Kustomization",
		object:   func() client.Object { return &kustomizev1.Kustomization{} },
		selector: managedBy,
		filter:   func() eventFilter { return newKustomizationFilter() },
		appsOf: func(ctx context.Context, t types.NamespacedName, obj client.Object) []types.NamespacedName {
			return r.appsOf(ctx, t, func(a *kubeoperav1alpha1.KubeOperaApp) bool {
				return render.FluxNamespace(a) == obj.GetNamespace() && render.FluxName(a) == obj.GetName() && r.kustomizationConcerns(ctx, t, a, obj)
			})
		},
	}, {
		name:     "Ingress",
		object:   func() client.Object { return &networkingv1.Ingress{} },
		selector: managedBy,
		filter:   newStatusOrGenerationFilter,
		appsOf: func(ctx context.Context, t types.NamespacedName, obj client.Object) []types.NamespacedName {
			return r.appsOf(ctx, t, func(a *kubeoperav1alpha1.KubeOperaApp) bool {
				ing := render.Ingress(a)
				return ing != nil && ing.Namespace == obj.GetNamespace() && ing.Name == obj.GetName()
			})
		},
	}, {
		name: "Certificate",
		object: func() client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(certificateGVK)
			return u
		},
		filter: newStatusOrGenerationFilter,
		appsOf: func(ctx context.Context, t types.NamespacedName, obj client.Object) []types.NamespacedName {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil
			}
			secret := certificateSecret(u)
			return r.appsOf(ctx, t, func(a *kubeoperav1alpha1.KubeOperaApp) bool {
				ing := render.Ingress(a)
				return ing != nil && len(ing.Spec.TLS) > 0 && ing.Namespace == obj.GetNamespace() && ing.Spec.TLS[0].SecretName == secret
			})
		},
		optional: true,
	}}
}

// appsOf lists the apps placed in Tenant t that match. Apps being deleted are left out:
// deletion removes the Flux objects itself and waits for them on its own requeue
// (DeletePollInterval), and an event queued behind the last deletion pass would only run a
// stale one.
func (r *Reconciler) appsOf(ctx context.Context, t types.NamespacedName, match func(*kubeoperav1alpha1.KubeOperaApp) bool) []types.NamespacedName {
	apps := &kubeoperav1alpha1.KubeOperaAppList{}
	if err := r.List(ctx, apps, client.InNamespace(t.Namespace), client.MatchingFields{indexTenant: t.Name}, readOnlyList); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the apps of a Tenant for a vCluster event")
		return nil
	}
	var out []types.NamespacedName
	for i := range apps.Items {
		if a := &apps.Items[i]; a.DeletionTimestamp.IsZero() && match(a) {
			out = append(out, types.NamespacedName{Namespace: a.Namespace, Name: a.Name})
		}
	}
	return out
}

// eventFilter decides which events of one cache are worth a pass (predicates.go explains why
// few are). A filter serves one cache only, so it may remember what it passed on.
type eventFilter interface {
	// added reports whether a created (or first listed) object is worth a pass.
	added(obj client.Object) bool
	// updated reports whether an update is worth a pass.
	updated(oldObj, newObj client.Object) bool
	// deleted is told of a deletion, which is always worth a pass.
	deleted(obj client.Object)
}

// statusOrGenerationFilter passes on every creation and deletion, and the updates that change the
// status or the spec (generation): not resyncs and metadata-only updates.
type statusOrGenerationFilter struct{}

func newStatusOrGenerationFilter() eventFilter { return statusOrGenerationFilter{} }

func (statusOrGenerationFilter) added(client.Object) bool { return true }

func (statusOrGenerationFilter) updated(o, n client.Object) bool {
	return statusOrGenerationChanged(o, n)
}

func (statusOrGenerationFilter) deleted(client.Object) {}

// statusOrGenerationChanged: an update worth a pass changes the status or the spec
// (generation).
func statusOrGenerationChanged(o, n client.Object) bool {
	if o.GetGeneration() != n.GetGeneration() {
		return true
	}
	switch ov := o.(type) {
	case *networkingv1.Ingress:
		nv, ok := n.(*networkingv1.Ingress)
		return !ok || !equality.Semantic.DeepEqual(ov.Status, nv.Status)
	case *unstructured.Unstructured:
		nv, ok := n.(*unstructured.Unstructured)
		return !ok || !equality.Semantic.DeepEqual(ov.Object["status"], nv.Object["status"])
	}
	return true
}
