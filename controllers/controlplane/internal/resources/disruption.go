package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// Topology keys the replicated components spread over (docs/controlplane.md#disruption-and-spread).
const (
	topologyHostname = corev1.LabelHostname
	topologyZone     = corev1.LabelTopologyZone
)

// PodDisruptionBudget is the PodDisruptionBudget of a replicated component (name: the
// component's workload name; docs/controlplane.md#disruption-and-spread): at most one of its pods
// is evicted at a time, so a node drain takes them one by one and never blocks.
func PodDisruptionBudget(cp *datasancev3.ControlPlane, component, name string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	m := MetaFor(cp, component, name)
	return policyv1ac.PodDisruptionBudget(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metaLabelSelector(selectorLabels(cp.Name, component))))
}

// topologySpread spreads a component's pods over nodes and zones as far as the scheduler can
// (ScheduleAnyway: a single-node or single-zone cluster still runs every replica).
func topologySpread(instance, component string) []*corev1ac.TopologySpreadConstraintApplyConfiguration {
	spread := make([]*corev1ac.TopologySpreadConstraintApplyConfiguration, 0, 2)
	for _, key := range []string{topologyHostname, topologyZone} {
		spread = append(spread, corev1ac.TopologySpreadConstraint().
			WithMaxSkew(1).
			WithTopologyKey(key).
			WithWhenUnsatisfiable(corev1.ScheduleAnyway).
			WithLabelSelector(metaLabelSelector(selectorLabels(instance, component))))
	}
	return spread
}

// ControllerReplicated reports whether the Controller runs more than one pod: only then does it
// get topology spread and a PodDisruptionBudget (a budget over one pod would block every drain
// or protect nothing).
func ControllerReplicated(spec *datasancev3.ControlPlaneSpec) bool {
	return spec.ControllerReplicas() > 1
}
