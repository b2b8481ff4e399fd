package controlplane

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
)

// controlPlanesForNatsData maps an event of the NATS data a ControlPlane keeps but does not own —
// a JetStream PVC js-data-nats-<i> or the JWT bundle ConfigMap — to the ControlPlanes of its
// namespace that run NATS: a lost bundle is rebuilt at once, and a refusal that waits for the
// PVCs (JetStreamKeyMissing, a volume smaller than the spec) is lifted when they change.
func (r *Reconciler) controlPlanesForNatsData(ctx context.Context, obj client.Object) []reconcile.Request {
	switch obj.(type) {
	case *corev1.PersistentVolumeClaim:
		if !natsDataClaimName.MatchString(obj.GetName()) {
			return nil
		}
	case *corev1.ConfigMap:
		if obj.GetName() != resources.NatsJWTBundleMapName {
			return nil
		}
	default:
		return nil
	}
	var list datasancev3.ControlPlaneList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the ControlPlanes of a NATS data object failed", scheme.KindOf(obj), klog.KObj(obj))
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.NatsEnabled() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}
