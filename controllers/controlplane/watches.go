package controlplane

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
)

// indexReferencedSecrets indexes ControlPlanes by the names of Secrets they read but do not own.
const indexReferencedSecrets = ".spec.referencedSecrets"

// referencedSecretNames lists the Secrets a ControlPlane reads without owning them: the
// credential references in use (bootstrap password, database password, client and session
// secrets, vault credentials; datasancev3.ControlPlaneSpec.CredentialRefs), the controller TLS Secret and CA Secret, the identity
// provider's CA Secret, the JetStream key (kept on
// deletion), and the fixed-name TLS Secrets a user may bring (bring-your-own CAs and server
// certificates).
func referencedSecretNames(obj client.Object) []string {
	cp, ok := obj.(*datasancev3.ControlPlane)
	if !ok {
		return nil
	}
	var names []string
	for _, r := range cp.Spec.CredentialRefs() {
		names = append(names, r.Ref.Name)
	}
	if cp.Spec.Controller.SecretName != "" {
		names = append(names, cp.Spec.Controller.SecretName)
	}
	if ref := cp.Spec.Controller.CASecretRef; ref != nil && ref.Name != "" {
		names = append(names, ref.Name)
	}
	if ref := cp.Spec.Auth.CASecretRef; ref != nil && ref.Name != "" {
		names = append(names, ref.Name)
	}
	if cp.Spec.NatsEnabled() {
		// Kept on deletion, so not owned: watched by name.
		names = append(names, resources.NatsJetStreamKeySecretName(cp.Name))
	}
	names = append(names, resources.RouterTLSSecretNames...)
	names = append(names, resources.NatsReferencedSecretNames(&cp.Spec)...)
	return names
}

// controlPlanesForSecret maps a Secret event to the ControlPlanes of its namespace that
// reference it.
func (r *Reconciler) controlPlanesForSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	var list datasancev3.ControlPlaneList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{indexReferencedSecrets: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the ControlPlanes that reference a Secret failed", "Secret", klog.KObj(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// controlPlanesForWorkload maps a Deployment (controller, router) or StatefulSet (nats) that no
// ControlPlane controls to the ControlPlanes of its namespace, so that one refused because of it
// (ForeignWorkload, takeover.go) is reconciled again when it is deleted or changed. Workloads a
// ControlPlane controls come through Owns.
func (r *Reconciler) controlPlanesForWorkload(ctx context.Context, obj client.Object) []reconcile.Request {
	switch obj.(type) {
	case *appsv1.Deployment:
		if obj.GetName() != resources.ControllerName && obj.GetName() != resources.RouterName {
			return nil
		}
	case *appsv1.StatefulSet:
		if obj.GetName() != resources.NatsStatefulSetName {
			return nil
		}
	default:
		return nil
	}
	if ref := metav1.GetControllerOf(obj); ref != nil && ref.Kind == "ControlPlane" && ref.APIVersion == datasancev3.GroupVersion.String() {
		return nil
	}
	var list datasancev3.ControlPlaneList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the ControlPlanes of a workload failed", scheme.KindOf(obj), klog.KObj(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
