package controlplane

import (
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

// UncachedObjects are the kinds the reconciler reads from the API server instead of a cache: the
// manager's client is built with them in client.CacheOptions.DisableFor, so the manager neither
// watches nor caches them:
//
//   - PodDisruptionBudgets, so that a manager running under RBAC without poddisruptionbudgets
//     (an older bundle's, in the middle of an upgrade) still starts and reconciles everything else
//     (docs/controlplane.md#disruption-and-spread);
//   - Pods and ReplicaSets, listed only while taking over from the Datasance operator
//     (takeover.go) or while a component's workload is not available (workloads.go), and Events,
//     listed only while the NATS StatefulSet is not available: a cache of every pod or Event of
//     the watched namespaces would cost memory in proportion to the cluster for what only a
//     failing ControlPlane needs.
func UncachedObjects() []client.Object {
	return []client.Object{&policyv1.PodDisruptionBudget{}, &corev1.Pod{}, &appsv1.ReplicaSet{}, &corev1.Event{}}
}
