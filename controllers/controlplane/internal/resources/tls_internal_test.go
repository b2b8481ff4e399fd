package resources

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The CA Secrets carry no owner reference: the Controller's database holds the CAs and has signed
// its agents' certificates with them, so they are kept with that database when the ControlPlane
// is deleted (docs/controlplane.md#data-on-deletion). Every leaf is owned and collected.
func TestCASecretsAreNotOwned(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane(testfixture.WithUID("uid-1"))
	specs := append(RouterCertificates("edge", "router.example.com"), NatsCertificates("edge", 2, "")...)
	var cas, leaves int
	for _, spec := range specs {
		secret := TLSSecret(cp, ComponentRouter, spec, map[string][]byte{"tls.crt": []byte("c")})
		if spec.IsCA() {
			cas++
			g.Expect(secret.OwnerReferences).To(BeEmpty(), "CA %s", spec.Name)
			g.Expect(secret.Labels).To(HaveKeyWithValue("app.kubernetes.io/instance", cp.Name), "CA %s is found by the instance label", spec.Name)
			continue
		}
		leaves++
		g.Expect(secret.OwnerReferences).To(HaveLen(1), "leaf %s", spec.Name)
		g.Expect(*secret.OwnerReferences[0].UID).To(Equal(cp.UID))
	}
	g.Expect(cas).To(Equal(4))
	g.Expect(leaves).To(Equal(4))
}
