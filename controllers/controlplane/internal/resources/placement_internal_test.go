package resources

import (
	"encoding/json"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The NATS memory limit follows the JetStream memory store (2 × store + overhead), GOMEMLIMIT is nine
// tenths of it, and a limit the spec sets is checked against the store.
func TestNatsMemoryFollowsTheStore(t *testing.T) {
	g := NewWithT(t)
	for store, limit := range map[string]string{"": "2268435456", "1G": "2268435456", "4Gi": "8448Mi", "256M": "780435456"} {
		cp := testfixture.ControlPlane()
		if store != "" {
			testfixture.WithJetStream(datasancev3.JetStream{MemoryStoreSize: store})(cp)
		}
		r := ComponentResources(&cp.Spec, ComponentNats)
		got := r.Limits[corev1.ResourceMemory]
		g.Expect(got.Equal(resource.MustParse(limit))).To(BeTrue(), "store %q: limit %s, want %s", store, got.String(), limit)
		g.Expect(goMemLimit(r)).To(Equal(strconv.FormatInt(got.Value()/10*9, 10)))
		g.Expect(CheckNatsMemory(&cp.Spec)).To(Succeed())
	}
	cp := testfixture.ControlPlane(testfixture.WithPods(datasancev3.Pods{Nats: &datasancev3.PodSettings{
		Resources: &datasancev3.Resources{Limits: testfixture.ResourceList("memory", "999M")}}}))
	g.Expect(CheckNatsMemory(&cp.Spec)).To(MatchError(ContainSubstring("999M does not exceed the JetStream memory store 1G")))
	cp.Spec.Pods.Nats.Resources.Limits = nil
	g.Expect(CheckNatsMemory(&cp.Spec)).To(Succeed(), "no memory limit, nothing to exceed")
	g.Expect(goMemLimit(*cp.Spec.Pods.Nats.Resources)).To(BeEmpty())
}

// Every placement setting converts to its apply configuration without losing a field: the JSON
// of the typed value and of the apply configuration are the same document.
func TestPlacementConvertsEveryField(t *testing.T) {
	g := NewWithT(t)
	s := testfixture.CompletePodSettings("nats")
	s.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", MatchLabelKeys: []string{"pod-template-hash"}},
	}}}
	seconds := int64(30)
	s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
	for _, v := range []struct{ typed, ac any }{
		{s.Affinity, applyConfiguration[corev1ac.AffinityApplyConfiguration](s.Affinity)},
		{&s.Tolerations[1], applyConfiguration[corev1ac.TolerationApplyConfiguration](&s.Tolerations[1])},
		{&s.TopologySpreadConstraints[0], applyConfiguration[corev1ac.TopologySpreadConstraintApplyConfiguration](&s.TopologySpreadConstraints[0])},
	} {
		want, err := json.Marshal(v.typed)
		g.Expect(err).NotTo(HaveOccurred())
		got, err := json.Marshal(v.ac)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(MatchJSON(want))
	}
}
