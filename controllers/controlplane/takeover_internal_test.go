package controlplane

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func pods(names ...string) []corev1.Pod {
	out := make([]corev1.Pod, len(names))
	for i, n := range names {
		out[i].Name = n
	}
	return out
}

// While the Datasance operator's NATS pods remain, this operator's run the ordinals below the lowest of
// theirs, never more than the spec asks.
func TestNatsHandoverReplicas(t *testing.T) {
	for _, tc := range []struct {
		legacy []string
		want   int32
	}{
		{[]string{"nats-0", "nats-1"}, 0},
		{[]string{"nats-1"}, 1},
		{[]string{"nats-2", "nats-1"}, 1},
		{[]string{"nats-3"}, 3},
		{[]string{"nats-7"}, 3},
		{[]string{"nats-x", "other-0"}, 3},
		{nil, 3},
	} {
		NewWithT(t).Expect(natsHandoverReplicas(3, pods(tc.legacy...))).To(Equal(tc.want), "%v", tc.legacy)
	}
}

// They are retired one at a time, the lowest ordinal first, names without one last; none while
// one is still stopping.
func TestNextLegacyNatsPod(t *testing.T) {
	g := NewWithT(t)
	g.Expect(nextLegacyNatsPod(pods("nats-10", "nats-2", "nats-x"))).To(HaveField("Name", "nats-2"))
	g.Expect(nextLegacyNatsPod(pods("nats-x", "nats-y"))).To(HaveField("Name", "nats-x"))
	g.Expect(nextLegacyNatsPod(nil)).To(BeNil())
	stopping := pods("nats-1", "nats-0")
	stopping[1].DeletionTimestamp = ptr.To(metav1.Now())
	g.Expect(nextLegacyNatsPod(stopping)).To(BeNil())
}
