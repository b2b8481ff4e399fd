package controlplane

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// OwnedLabels are the labels every object the ControlPlane reconciler creates carries (a subset
// of resources.StandardLabels). The manager selects its caches of Secrets and ConfigMaps by them, so
// unrelated objects of the cluster are not cached.
func OwnedLabels() map[string]string {
	return map[string]string{resources.LabelManagedBy: resources.LabelManagedByValue}
}

// uncachedReads is the reconciler's client with a few kinds read from the API server (live)
// instead of the cache, so that the manager neither watches nor caches them:
//
//   - PodDisruptionBudgets, so that a manager running under RBAC without poddisruptionbudgets
//     (an older bundle's, in the middle of an upgrade) still starts and reconciles everything else
//     (docs/controlplane.md#disruption-and-spread);
//   - the lists of Pods and ReplicaSets, read only while taking over from the Datasance operator
//     (takeover.go) or while a component's workload is not available (workloads.go), and of
//     Events, read only while the NATS StatefulSet is not available: a cache of every pod or
//     Event of the watched namespaces would cost memory in proportion to the cluster for what
//     only a failing ControlPlane needs.
type uncachedReads struct {
	client.Client
	live client.Reader
}

// Get reads a PodDisruptionBudget from the API server and anything else from the client.
func (c uncachedReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*policyv1.PodDisruptionBudget); ok {
		return c.live.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// List lists Pods, ReplicaSets and Events from the API server and anything else from the client.
func (c uncachedReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *corev1.PodList, *appsv1.ReplicaSetList, *corev1.EventList:
		return c.live.List(ctx, list, opts...)
	}
	return c.Client.List(ctx, list, opts...)
}
