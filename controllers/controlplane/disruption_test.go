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

// NATS always has a PodDisruptionBudget (maxUnavailable 1) and spreads over nodes and zones; the
// Controller has both only while it runs more than one replica. Scaling the Controller to one
// deletes its budget, disabling NATS deletes NATS's (docs/controlplane.md#disruption-and-spread).
func TestDisruptionBudgetsFollowReplicas(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 2 }))

	for name, component := range map[string]string{"nats": "nats", "controller": "controller"} {
		p := h.pdb(name)
		g.Expect(p).NotTo(BeNil(), name)
		g.Expect(p.Spec.MaxUnavailable).To(HaveValue(Equal(intstr.FromInt32(1))), name)
		g.Expect(p.Spec.MinAvailable).To(BeNil(), name)
		g.Expect(p.Spec.Selector).To(Equal(&metav1.LabelSelector{MatchLabels: map[string]string{
			"app.kubernetes.io/name": "iofog", "app.kubernetes.io/instance": cpName, "app.kubernetes.io/component": component,
		}}), name)
		g.Expect(metav1.GetControllerOf(p).Name).To(Equal(cpName), name)
	}
	spreadKeys := func(c []corev1.TopologySpreadConstraint) []string {
		var keys []string
		for _, s := range c {
			g.Expect(s.WhenUnsatisfiable).To(Equal(corev1.ScheduleAnyway))
			keys = append(keys, s.TopologyKey)
		}
		return keys
	}
	g.Expect(spreadKeys(h.statefulSet().Spec.Template.Spec.TopologySpreadConstraints)).To(ConsistOf(corev1.LabelHostname, corev1.LabelTopologyZone))
	g.Expect(spreadKeys(h.deployment("controller").Spec.Template.Spec.TopologySpreadConstraints)).To(ConsistOf(corev1.LabelHostname, corev1.LabelTopologyZone))

	// Ready and unchanged: the budgets are not written again.
	writes := h.writes.Load()
	h.mustBeReady()
	g.Expect(h.writes.Load() - writes).To(BeZero())

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 1 })
	g.Expect(h.pdb("controller")).To(BeNil())
	g.Expect(h.deployment("controller").Spec.Template.Spec.TopologySpreadConstraints).To(BeEmpty())
	g.Expect(h.pdb("nats")).NotTo(BeNil())

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{Enabled: ptr.To(false)} })
	g.Expect(h.pdb("nats")).To(BeNil())
}
