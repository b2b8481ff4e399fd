package resources

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// NATS's budget keeps the JetStream quorum (a majority of the servers) from three servers on; two
// servers, where no disruption keeps a quorum, and the Controller let one pod go at a time. Every
// budget sets exactly one of minAvailable and maxUnavailable.
func TestPodDisruptionBudgetPerReplicaCount(t *testing.T) {
	one := intstr.FromInt32(1)
	cases := map[string]struct {
		mods           []testfixture.Mod
		component      string
		minAvailable   *intstr.IntOrString
		maxUnavailable *intstr.IntOrString
	}{
		"NATS, default (3)":      {nil, ComponentNats, ptr.To(intstr.FromInt32(2)), nil},
		"NATS, below the floor":  {[]testfixture.Mod{testfixture.WithNATSReplicas(1)}, ComponentNats, nil, &one},
		"NATS, 2":                {[]testfixture.Mod{testfixture.WithNATSReplicas(2)}, ComponentNats, nil, &one},
		"NATS, 3":                {[]testfixture.Mod{testfixture.WithNATSReplicas(3)}, ComponentNats, ptr.To(intstr.FromInt32(2)), nil},
		"NATS, 4":                {[]testfixture.Mod{testfixture.WithNATSReplicas(4)}, ComponentNats, ptr.To(intstr.FromInt32(3)), nil},
		"NATS, 5":                {[]testfixture.Mod{testfixture.WithNATSReplicas(5)}, ComponentNats, ptr.To(intstr.FromInt32(3)), nil},
		"NATS, 7":                {[]testfixture.Mod{testfixture.WithNATSReplicas(7)}, ComponentNats, ptr.To(intstr.FromInt32(4)), nil},
		"Controller, 2 replicas": {[]testfixture.Mod{func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 2 }}, ComponentController, nil, &one},
		"Controller, 5 replicas": {[]testfixture.Mod{func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 5 }}, ComponentController, nil, &one},
		"Controller, 3, NATS 3":  {[]testfixture.Mod{testfixture.WithNATSReplicas(3), func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 3 }}, ComponentController, nil, &one},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			cp := testfixture.ControlPlane(tc.mods...)
			p := PodDisruptionBudget(cp, tc.component, tc.component)
			g.Expect(p.Spec.MinAvailable).To(Equal(tc.minAvailable))
			g.Expect(p.Spec.MaxUnavailable).To(Equal(tc.maxUnavailable))
			g.Expect(p.Spec.Selector.MatchLabels).To(Equal(map[string]string{
				labelName: labelNameValue, labelInstance: testfixture.Name, labelComponent: tc.component,
			}))
		})
	}
}

// NATS's hostname spread is hard and leaves tainted (cordoned) nodes out of its domains; its zone
// spread and both of a replicated Controller's spreads only prefer.
func TestTopologySpread(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 2 })
	type spread struct {
		when   corev1.UnsatisfiableConstraintAction
		taints *corev1.NodeInclusionPolicy
		skew   int32
	}
	spreads := func(pod *corev1ac.PodSpecApplyConfiguration) map[string]spread {
		out := map[string]spread{}
		for _, c := range pod.TopologySpreadConstraints {
			g.Expect(c.LabelSelector).NotTo(BeNil())
			out[*c.TopologyKey] = spread{*c.WhenUnsatisfiable, c.NodeTaintsPolicy, *c.MaxSkew}
		}
		return out
	}
	honor := corev1.NodeInclusionPolicyHonor

	sts := NatsStatefulSet(cp, NatsWorkload{Image: "nats:x", Storage: DesiredNatsStorage(&cp.Spec)})
	g.Expect(spreads(sts.Spec.Template.Spec)).To(Equal(map[string]spread{
		corev1.LabelHostname:     {corev1.DoNotSchedule, &honor, 1},
		corev1.LabelTopologyZone: {corev1.ScheduleAnyway, nil, 1},
	}))

	d := ControllerDeployment(cp, testImages, ControllerURLs{PublicURL: "http://p", ConsoleURL: "http://p"}, ControllerPodHashes{Credentials: "c"})
	g.Expect(spreads(d.Spec.Template.Spec)).To(Equal(map[string]spread{
		corev1.LabelHostname:     {corev1.ScheduleAnyway, nil, 1},
		corev1.LabelTopologyZone: {corev1.ScheduleAnyway, nil, 1},
	}))
}
