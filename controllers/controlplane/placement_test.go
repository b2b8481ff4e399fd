package controlplane_test

import (
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// Every operand container has CPU and memory requests and limits by default (no BestEffort pod, a
// namespace whose quota counts compute admits them); the NATS memory limit covers the JetStream
// memory store and GOMEMLIMIT keeps the server's heap below it.
func TestOperandsHaveRequestsAndLimitsByDefault(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithJetStream(datasancev3.JetStream{MemoryStoreSize: "2Gi"})))
	containers := map[string]corev1.Container{
		"controller": h.deployment("controller").Spec.Template.Spec.Containers[0],
		"router":     h.deployment("router").Spec.Template.Spec.Containers[0],
		"nats":       h.statefulSet().Spec.Template.Spec.Containers[0],
	}
	for name, c := range containers {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			g.Expect(c.Resources.Requests).To(HaveKey(r), "%s requests %s", name, r)
			g.Expect(c.Resources.Limits).To(HaveKey(r), "%s limits %s", name, r)
		}
	}
	natsLimit := containers["nats"].Resources.Limits[corev1.ResourceMemory]
	store := resource.MustParse("2Gi")
	g.Expect(natsLimit.Cmp(store)).To(Equal(1), "the NATS memory limit %s exceeds the memory store", natsLimit.String())
	g.Expect(containers["nats"].Env).To(ContainElement(corev1.EnvVar{Name: "GOMEMLIMIT", Value: strconv.FormatInt(natsLimit.Value()/10*9, 10)}))
}

// Pod settings reach every component's pods as written, the API server accepts them, and a pass
// over an unchanged ControlPlane writes nothing (the quantities the API server stores compare
// equal to the ones the operator applies).
func TestPodSettingsReachThePods(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	pods := testfixture.CompletePods()
	// A quantity the API server rewrites in canonical form ("0.5" is stored as "500m").
	pods.Router.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("0.5")
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithPods(pods)))
	templates := map[string]corev1.PodSpec{
		"controller": h.deployment("controller").Spec.Template.Spec,
		"router":     h.deployment("router").Spec.Template.Spec,
		"nats":       h.statefulSet().Spec.Template.Spec,
	}
	for name, pod := range templates {
		want := testfixture.CompletePodSettings(name)
		if name == "router" {
			want.Resources = pods.Router.Resources
		}
		g.Expect(pod.NodeSelector).To(Equal(want.NodeSelector), name)
		g.Expect(pod.Tolerations).To(Equal(want.Tolerations), name)
		g.Expect(pod.Affinity).To(Equal(want.Affinity), name)
		g.Expect(pod.TopologySpreadConstraints).To(Equal(want.TopologySpreadConstraints), "%s: the spec's spread replaces the operator's", name)
		g.Expect(pod.PriorityClassName).To(Equal(want.PriorityClassName), name)
		r := pod.Containers[0].Resources
		for k, q := range want.Resources.Requests {
			g.Expect(r.Requests[k].Equal(q)).To(BeTrue(), "%s requests %s", name, k)
		}
		for k, q := range want.Resources.Limits {
			g.Expect(r.Limits[k].Equal(q)).To(BeTrue(), "%s limits %s", name, k)
		}
		g.Expect(r.Requests).To(HaveLen(len(want.Resources.Requests)), "%s: set resources replace the defaults whole", name)
	}

	writes := h.writes.Load()
	h.mustBeReady()
	g.Expect(h.writes.Load()-writes).To(BeZero(), "a pass over unchanged pod settings writes nothing")
}

// A NATS memory limit at or below the JetStream memory store is refused before anything of NATS
// is written (InvalidConfiguration, with an Event); raising the limit brings NATS up with it.
func TestNatsMemoryLimitBelowTheStoreIsRefused(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.startManager()
	limited := func(memory string) testfixture.Mod {
		return testfixture.WithPods(datasancev3.Pods{Nats: &datasancev3.PodSettings{
			Resources: &datasancev3.Resources{Limits: testfixture.ResourceList("memory", memory)}}})
	}
	h.create(h.controlPlane(testfixture.WithNATS(), limited("1G")))
	g.Eventually(func(g Gomega) {
		h.assignAddresses()
		h.assignNatsAddress()
		c := trueConditionOf(h.get())
		g.Expect(c.Reason).To(Equal(datasancev3.ReasonInvalidConfiguration))
		g.Expect(c.Message).To(ContainSubstring("spec.pods.nats.resources.limits.memory 1G does not exceed the JetStream memory store 1G"))
		g.Expect(h.storedEvents()).To(ContainElement(HavePrefix("Warning " + datasancev3.ReasonInvalidConfiguration)))
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(h.exists(&appsv1.StatefulSet{}, "nats")).To(BeFalse())

	h.update(func(cp *datasancev3.ControlPlane) { limited("1536Mi")(cp) })
	g.Eventually(func(g Gomega) {
		h.assignAddresses()
		h.assignNatsAddress()
		g.Expect(trueConditionOf(h.get()).Type).To(Equal(datasancev3.ConditionReady))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	limit := h.statefulSet().Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]
	g.Expect(limit.String()).To(Equal("1536Mi"))
}
