package resources

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// Every applied Secret of every component comes from Secret: its component's labels, the
// controller reference, the type and the data asked for.
func TestSecret(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane(testfixture.WithUID("uid-1"))
	for _, tc := range []struct {
		component string
		typ       corev1.SecretType
	}{
		{ComponentController, corev1.SecretTypeOpaque},
		{ComponentNats, corev1.SecretTypeOpaque},
		{ComponentRouter, corev1.SecretTypeTLS},
	} {
		s := Secret(cp, tc.component, "s", tc.typ, map[string][]byte{"k": []byte("v")})
		g.Expect(*s.Name).To(Equal("s"))
		g.Expect(*s.Namespace).To(Equal("edge"))
		g.Expect(*s.Type).To(Equal(tc.typ))
		g.Expect(s.Data).To(Equal(map[string][]byte{"k": []byte("v")}))
		g.Expect(s.Labels).To(Equal(StandardLabels("iofog", tc.component)))
		g.Expect(s.OwnerReferences).To(HaveLen(1))
		g.Expect(*s.OwnerReferences[0].UID).To(BeEquivalentTo("uid-1"))
		g.Expect(*s.OwnerReferences[0].Controller).To(BeTrue())
	}
}
