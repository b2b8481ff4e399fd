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
// component's workload name; docs/controlplane.md#disruption-and-spread). NATS's budget follows
// its replica count (natsDisruption); the Controller's lets one pod go at a time
// (maxUnavailable 1), so a drain takes its pods one by one and never blocks. The spec sets exactly
// one of minAvailable and maxUnavailable and leaves the other out of the apply configuration, so
// when the budget switches between them server-side apply drops the field this operator no longer
// sets.
func PodDisruptionBudget(cp *datasancev3.ControlPlane, component, name string) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	m := MetaFor(cp, component, name)
	spec := policyv1ac.PodDisruptionBudgetSpec().
		WithSelector(metaLabelSelector(selectorLabels(cp.Name, component)))
	if component == ComponentNats {
		natsDisruption(spec, cp.Spec.NatsReplicas())
	} else {
		spec.WithMaxUnavailable(intstr.FromInt32(1))
	}
	return policyv1ac.PodDisruptionBudget(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(spec)
}

// natsDisruption sets the budget of n NATS servers. The JetStream meta group needs a majority of
// the servers (n/2 + 1), so from three servers on the budget keeps that many available and a node
// drain waits, server by server, until the evicted one is back and ready. Two servers have no
// disruption that keeps a quorum (the majority of two is two); a budget that allowed none would
// stall every node drain and cluster upgrade, so two servers keep maxUnavailable 1 and JetStream
// is unavailable while one of them is down.
func natsDisruption(spec *policyv1ac.PodDisruptionBudgetSpecApplyConfiguration, n int32) {
	if n < 3 {
		spec.WithMaxUnavailable(intstr.FromInt32(1))
		return
	}
	spec.WithMinAvailable(intstr.FromInt32(n/2 + 1))
}

// topologySpread spreads a component's pods over nodes and zones. The zone spread is always
// ScheduleAnyway (a single-zone cluster still runs every replica). The hostname spread is
// ScheduleAnyway as well unless hardHostname: then it is DoNotSchedule and honours node taints, so
// a cordoned or tainted node is no domain of the spread and a pod evicted from it can be placed on
// the other nodes; a one-node cluster is one domain and still runs every replica.
func topologySpread(instance, component string, hardHostname bool) []*corev1ac.TopologySpreadConstraintApplyConfiguration {
	spread := make([]*corev1ac.TopologySpreadConstraintApplyConfiguration, 0, 2)
	for _, key := range []string{topologyHostname, topologyZone} {
		c := corev1ac.TopologySpreadConstraint().
			WithMaxSkew(1).
			WithTopologyKey(key).
			WithWhenUnsatisfiable(corev1.ScheduleAnyway).
			WithLabelSelector(metaLabelSelector(selectorLabels(instance, component)))
		if key == topologyHostname && hardHostname {
			c.WithWhenUnsatisfiable(corev1.DoNotSchedule).
				WithNodeTaintsPolicy(corev1.NodeInclusionPolicyHonor)
		}
		spread = append(spread, c)
	}
	return spread
}

// ControllerReplicated reports whether the Controller runs more than one pod: only then does it
// get topology spread and a PodDisruptionBudget (a budget over one pod would block every drain
// or protect nothing).
func ControllerReplicated(spec *datasancev3.ControlPlaneSpec) bool {
	return spec.ControllerReplicas() > 1
}
