package controlplane

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// removeNats runs when spec.nats.enabled is false. NATS objects of an earlier enabled generation
// are garbage then, but only the running parts go (this operator's choice; the spec leaves it open): StatefulSet
// nats, its PodDisruptionBudget and the three Services — the pods and the load balancers. Everything that carries state
// or identity stays, so that enabling NATS again resumes where it stopped: the js-data PVCs
// (JetStream data), the JetStream key (without it that data is unreadable), the CA Secrets (the
// Controller's catalog holds them; docs/controlplane.md#create-once-objects), the server certificates, the bootstrap Secrets,
// the ConfigMaps (server.conf keeps the Controller's routes) and the RBAC objects. Only objects
// controlled by this ControlPlane are deleted.
func (r *Reconciler) removeNats(ctx context.Context, s *scope) error {
	for _, o := range []struct {
		kind, name string
		obj        client.Object
	}{
		{"StatefulSet", resources.NatsStatefulSetName, &appsv1.StatefulSet{}},
		{"PodDisruptionBudget", resources.NatsStatefulSetName, &policyv1.PodDisruptionBudget{}},
		{"Service", resources.NatsServiceName, &corev1.Service{}},
		{"Service", resources.NatsServerServiceName, &corev1.Service{}},
		{"Service", resources.NatsHeadlessServiceName, &corev1.Service{}},
	} {
		found, err := r.getExisting(ctx, s, o.name, o.obj)
		if err != nil {
			return err
		}
		if !found || !isControlledBy(o.obj, s.cp.UID) {
			continue
		}
		if err := r.deleteOwned(ctx, s, o.name, o.obj); err != nil {
			return err
		}
		ctrl.LoggerFrom(ctx).Info("Deleted NATS object: NATS is disabled", o.kind, klog.KRef(s.namespace(), o.name))
		r.event(s.cp, corev1.EventTypeNormal, eventNatsRemoved, fmt.Sprintf("NATS is disabled: deleted %s %s.", o.kind, o.name))
	}
	return nil
}
