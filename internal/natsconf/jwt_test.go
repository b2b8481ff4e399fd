package natsconf_test

import (
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// Real bootstrap material (an operator JWT and a system account public key,
// as the Controller returns them) fits the rendered file unchanged.
func TestRenderWithRealJWT(t *testing.T) {
	g := NewWithT(t)
	operatorKP, err := nkeys.CreateOperator()
	g.Expect(err).NotTo(HaveOccurred())
	operatorPub, err := operatorKP.PublicKey()
	g.Expect(err).NotTo(HaveOccurred())
	accountKP, err := nkeys.CreateAccount()
	g.Expect(err).NotTo(HaveOccurred())
	systemAccount, err := accountKP.PublicKey()
	g.Expect(err).NotTo(HaveOccurred())

	claims := jwt.NewOperatorClaims(operatorPub)
	claims.Name = "iofog"
	claims.SystemAccount = systemAccount
	operatorJWT, err := claims.Encode(operatorKP)
	g.Expect(err).NotTo(HaveOccurred())

	m := parse(t, mustRender(t, params(func(p *natsconf.Params) {
		p.OperatorJWT = operatorJWT
		p.SystemAccount = systemAccount
	}), ""))
	g.Expect(m).To(HaveKeyWithValue("operator", operatorJWT))
	g.Expect(m).To(HaveKeyWithValue("system_account", systemAccount))

	decoded, err := jwt.DecodeOperatorClaims(m["operator"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(decoded.Subject).To(Equal(operatorPub))
	g.Expect(decoded.SystemAccount).To(Equal(systemAccount))
}
