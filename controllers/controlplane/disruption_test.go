package controlplane_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// pdb reads PodDisruptionBudget name, or nil when there is none.
func (h *harness) pdb(name string) *policyv1.PodDisruptionBudget {
	h.t.Helper()
	p := &policyv1.PodDisruptionBudget{}
	if !h.exists(p, name) {
		return nil
	}
	return p
}

// natsBudget expects NATS's PodDisruptionBudget to set exactly one of minAvailable and
// maxUnavailable: want is minAvailable when byMinAvailable is true, maxUnavailable otherwise.
func (h *harness) natsBudget(byMinAvailable bool, want int32) {
	h.t.Helper()
	p := h.pdb("nats")
	h.g.Expect(p).NotTo(BeNil())
	if byMinAvailable {
		h.g.Expect(p.Spec.MinAvailable).To(HaveValue(Equal(intstr.FromInt32(want))), "minAvailable")
		h.g.Expect(p.Spec.MaxUnavailable).To(BeNil(), "maxUnavailable")
		return
	}
	h.g.Expect(p.Spec.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(want))), "maxUnavailable")
	h.g.Expect(p.Spec.MinAvailable).To(BeNil(), "minAvailable")
}

// NATS always has a PodDisruptionBudget, which keeps the JetStream quorum (a majority of the
// servers available) from three servers on and lets one of two servers go; it spreads hard over
// nodes (tainted nodes are no domain) and softly over zones. The Controller has a budget
// (maxUnavailable 1) and a soft spread only while it runs more than one replica. Scaling NATS
// switches its budget between minAvailable and maxUnavailable, and the field the operator no
// longer sets goes (the API server refuses a budget with both). Scaling the Controller to one
// deletes its budget, disabling NATS deletes NATS's (docs/controlplane.md#disruption-and-spread).
func TestDisruptionBudgetsFollowReplicas(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 2 }))

	g.Expect(*h.statefulSet().Spec.Replicas).To(Equal(int32(3)), "three NATS servers by default")
	h.natsBudget(true, 2)
	controller := h.pdb("controller")
	g.Expect(controller).NotTo(BeNil())
	g.Expect(controller.Spec.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(1))))
	g.Expect(controller.Spec.MinAvailable).To(BeNil())
	for name, component := range map[string]string{"nats": "nats", "controller": "controller"} {
		p := h.pdb(name)
		g.Expect(p.Spec.Selector).To(Equal(&metav1.LabelSelector{MatchLabels: map[string]string{
			"app.kubernetes.io/name": "iofog", "app.kubernetes.io/instance": cpName, "app.kubernetes.io/component": component,
		}}), name)
		g.Expect(metav1.GetControllerOf(p).Name).To(Equal(cpName), name)
	}
	type spread struct {
		when   corev1.UnsatisfiableConstraintAction
		taints *corev1.NodeInclusionPolicy
	}
	spreads := func(c []corev1.TopologySpreadConstraint) map[string]spread {
		out := map[string]spread{}
		for _, s := range c {
			g.Expect(s.MaxSkew).To(Equal(int32(1)), s.TopologyKey)
			out[s.TopologyKey] = spread{s.WhenUnsatisfiable, s.NodeTaintsPolicy}
		}
		return out
	}
	g.Expect(spreads(h.statefulSet().Spec.Template.Spec.TopologySpreadConstraints)).To(Equal(map[string]spread{
		corev1.LabelHostname:     {corev1.DoNotSchedule, ptr.To(corev1.NodeInclusionPolicyHonor)},
		corev1.LabelTopologyZone: {corev1.ScheduleAnyway, nil},
	}))
	g.Expect(spreads(h.deployment("controller").Spec.Template.Spec.TopologySpreadConstraints)).To(Equal(map[string]spread{
		corev1.LabelHostname:     {corev1.ScheduleAnyway, nil},
		corev1.LabelTopologyZone: {corev1.ScheduleAnyway, nil},
	}))

	// Ready and unchanged: the budgets are not written again.
	writes := h.writes.Load()
	h.mustBeReady()
	g.Expect(h.writes.Load() - writes).To(BeZero())

	// Two servers have no disruption that keeps a quorum: one may go, so drains never block.
	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To[int32](2) })
	h.natsBudget(false, 1)
	// Five servers: three must stay.
	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To[int32](5) })
	h.natsBudget(true, 3)
	// Back to the default.
	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = nil })
	h.natsBudget(true, 2)

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 1 })
	g.Expect(h.pdb("controller")).To(BeNil())
	g.Expect(h.deployment("controller").Spec.Template.Spec.TopologySpreadConstraints).To(BeEmpty())
	g.Expect(h.pdb("nats")).NotTo(BeNil())

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{Enabled: ptr.To(false)} })
	g.Expect(h.pdb("nats")).To(BeNil())
}
