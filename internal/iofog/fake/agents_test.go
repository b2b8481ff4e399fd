package fake_test

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
)

// Provisioning agents creates the CAs the Controller needs when they are missing, as
// _handleRouterCertificates does: self-signed RSA CAs named after themselves, valid 60 months,
// with the agents' certificates signed by them. An exec session's client certificate needs
// default-router-local-ca. GET /certificates lists every CA and certificate with its signer, and
// a signed CA cannot be deleted until its certificates are.
func TestTheControllerMakesItsOwnCAs(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	token := srv.IssueToken()

	g.Expect(srv.ExecSession("controller-7d9c-abcde")).To(MatchError(ContainSubstring(`no CA "default-router-local-ca"`)))
	g.Expect(srv.ProvisionAgent("edge-1", false)).To(Succeed())
	g.Expect(srv.ImportedCAs()).To(Equal([]string{"router-site-ca", "router-local-ca-edge-1"}))
	g.Expect(srv.ProvisionAgent("edge-2", true)).To(Succeed())
	g.Expect(srv.ExecSession("controller-7d9c-abcde")).To(Succeed())
	g.Expect(srv.ImportedCAs()).To(Equal([]string{"router-site-ca", "router-local-ca-edge-1", "default-router-local-ca"}))
	g.Expect(srv.SignedBy("default-router-local-ca")).To(Equal([]string{"router-local-agent-edge-2", "controller-exec-session-client-controller-7d9c-abcde"}))

	certPEM, keyPEM, ok := srv.CA("default-router-local-ca")
	g.Expect(ok).To(BeTrue())
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cert.IsCA).To(BeTrue())
	g.Expect(cert.Subject.CommonName).To(Equal("default-router-local-ca"))
	g.Expect(cert.NotAfter.Sub(cert.NotBefore).Hours() / 24).To(BeNumerically("~", 5*365, 2))
	g.Expect(cert.PublicKey).To(BeAssignableToTypeOf(&rsa.PublicKey{}), "node-forge makes RSA keys")
	g.Expect(keyPEM).NotTo(BeEmpty())

	a := do(t, srv, http.MethodGet, "/api/v3/certificates", "", "", token)
	expectJSON(g, a, http.StatusOK, `{"certificates":[
		{"name":"router-site-ca","subject":"router-site-ca","isCA":true,"caName":null},
		{"name":"router-site-server-edge-1","subject":"router-site-server-edge-1","isCA":false,"caName":"router-site-ca"},
		{"name":"router-local-ca-edge-1","subject":"router-local-ca-edge-1","isCA":true,"caName":null},
		{"name":"router-local-server-edge-1","subject":"router-local-server-edge-1","isCA":false,"caName":"router-local-ca-edge-1"},
		{"name":"router-local-agent-edge-1","subject":"router-local-agent-edge-1","isCA":false,"caName":"router-local-ca-edge-1"},
		{"name":"default-router-local-ca","subject":"default-router-local-ca","isCA":true,"caName":null},
		{"name":"router-local-agent-edge-2","subject":"router-local-agent-edge-2","isCA":false,"caName":"default-router-local-ca"},
		{"name":"controller-exec-session-client-controller-7d9c-abcde","subject":"controller-exec-session-client-controller-7d9c-abcde","isCA":false,"caName":"default-router-local-ca"}
	]}`)
	g.Expect(do(t, srv, http.MethodGet, "/api/v3/certificates", "", "", "").status).To(Equal(http.StatusUnauthorized))

	g.Expect(do(t, srv, http.MethodDelete, "/api/v3/certificates/ca/default-router-local-ca", "", "", token).status).To(Equal(http.StatusInternalServerError))
	for _, name := range srv.SignedBy("default-router-local-ca") {
		g.Expect(do(t, srv, http.MethodDelete, "/api/v3/certificates/"+name, "", "", token).status).To(Equal(http.StatusOK))
	}
	g.Expect(do(t, srv, http.MethodDelete, "/api/v3/certificates/ca/default-router-local-ca", "", "", token).status).To(Equal(http.StatusOK))
	g.Expect(srv.ImportedCAs()).NotTo(ContainElement("default-router-local-ca"))
}
