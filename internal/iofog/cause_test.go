package iofog_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// Cause gives the same text for the same kind of failure on every call, whatever the ephemeral
// ports in err.Error(): a reset connection, an HTTP error class, a timeout, a refused dial.
func TestCauseIsStablePerKind(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c := newClient(t, srv, iofog.WithTimeout(300*time.Millisecond))

	srv.FailAlways("GET /api/v3/status", fake.Failure{Reset: true})
	var texts []string
	for range 3 {
		_, err := c.Status(context.Background())
		g.Expect(err).To(HaveOccurred())
		g.Expect(iofog.IsRetryable(err)).To(BeTrue())
		g.Expect(iofog.Cause(err)).To(Equal("connection reset"), "error: %v", err)
		texts = append(texts, err.Error())
	}
	g.Expect(texts[0]).NotTo(Equal(texts[1]), "the raw error differs per connection (local port), the cause does not")

	srv.ClearFailures()
	srv.FailAlways("GET /api/v3/status", fake.Failure{Status: http.StatusServiceUnavailable})
	_, err := c.Status(context.Background())
	g.Expect(iofog.Cause(err)).To(Equal("HTTP 503 Error"))

	srv.ClearFailures()
	srv.FailAlways("GET /api/v3/status", fake.Failure{Hang: true})
	_, err = c.Status(context.Background())
	g.Expect(iofog.Cause(err)).To(Equal("timeout"))

	srv.ClearFailures()
	srv.FailAlways("GET /api/v3/status", fake.Failure{Garbage: true})
	_, err = c.Status(context.Background())
	g.Expect(iofog.Cause(err)).To(Equal("invalid response"))

	srv.Close()
	_, err = c.Status(context.Background())
	g.Expect(iofog.Cause(err)).To(Equal("connection refused"))
	g.Expect(iofog.Cause(nil)).To(BeEmpty())
}

// A fake serving a certificate of a test CA: trusted with that CA; a certificate that does not
// cover the dialled name is a CertificateMismatch naming the host and the SANs; WithServerNames
// dials one address and verifies another name.
func TestCertificateMismatchAndServerName(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	ca, err := pki.GenerateCA("test-ca", now, time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	leaf, err := pki.GenerateLeaf(ca, "controller", []string{"controller.example.com", "127.0.0.1"}, now, time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	srv := fake.NewTLSServer(fake.WithTLSCertificate(cert))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)

	// Dialled by IP, covered by the IP SAN.
	c := newClient(t, srv, iofog.WithRootCAs(pool))
	_, err = c.Status(context.Background())
	g.Expect(err).NotTo(HaveOccurred())

	// The same address verified as a name the certificate covers.
	c = newClient(t, srv, iofog.WithRootCAs(pool), iofog.WithServerNames("controller.example.com"))
	_, err = c.Status(context.Background())
	g.Expect(err).NotTo(HaveOccurred())

	// A name it does not cover.
	c = newClient(t, srv, iofog.WithRootCAs(pool), iofog.WithServerNames("controller.other.svc"))
	_, err = c.Status(context.Background())
	g.Expect(err).To(HaveOccurred())
	g.Expect(iofog.IsRetryable(err)).To(BeFalse())
	m, ok := iofog.AsCertificateMismatch(err)
	g.Expect(ok).To(BeTrue(), "error: %v", err)
	g.Expect(m.Host).To(Equal("controller.other.svc"))
	g.Expect(m.Names).To(ConsistOf("controller.example.com", "127.0.0.1"))
	g.Expect(m.UnknownAuthority).To(BeFalse())

	// Not trusting the CA.
	c = newClient(t, srv, iofog.WithRootCAs(x509.NewCertPool()))
	_, err = c.Status(context.Background())
	m, ok = iofog.AsCertificateMismatch(err)
	g.Expect(ok).To(BeTrue(), "error: %v", err)
	g.Expect(m.UnknownAuthority).To(BeTrue())
	g.Expect(m.Names).To(ConsistOf("controller.example.com", "127.0.0.1"))

	// Not a certificate problem.
	_, ok = iofog.AsCertificateMismatch(&net.OpError{Op: "dial"})
	g.Expect(ok).To(BeFalse())
}

// WithServerNames: a certificate covering any one of the names is accepted, in any order; one
// covering none fails with the certificate's names; and the names apply to the Controller only:
// the identity provider (another host:port) is verified as its own host.
func TestServerNamesApplyToTheControllerOnly(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	ca, err := pki.GenerateCA("test-ca", now, time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	serve := func(names []string, opts ...fake.Option) *fake.Server {
		leaf, err := pki.GenerateLeaf(ca, "server", names, now, time.Hour)
		g.Expect(err).NotTo(HaveOccurred())
		cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
		g.Expect(err).NotTo(HaveOccurred())
		srv := fake.NewTLSServer(append(opts, fake.WithTLSCertificate(cert))...)
		t.Cleanup(srv.Close)
		return srv
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	// The Controller's certificate is for its public host only; the IdP's for its own address.
	controller := serve([]string{"iofog.example.com"})
	idp := serve([]string{"127.0.0.1"}, fake.WithOIDCClient("op", "secret"))

	for _, names := range [][]string{
		{"controller.ns.svc.cluster.local", "iofog.example.com"},
		{"iofog.example.com", "controller.ns.svc.cluster.local"},
	} {
		c := newClient(t, controller, iofog.WithRootCAs(pool), iofog.WithServerNames(names...))
		_, err := c.Status(context.Background())
		g.Expect(err).NotTo(HaveOccurred(), "names %v", names)
		_, err = c.LoginClientCredentials(context.Background(), idp.IssuerURL(), "op", "secret")
		g.Expect(err).NotTo(HaveOccurred(), "the IdP is verified as 127.0.0.1, not as %v", names)
	}

	c := newClient(t, controller, iofog.WithRootCAs(pool), iofog.WithServerNames("controller.ns.svc.cluster.local", "other.example.com"))
	_, err = c.Status(context.Background())
	m, ok := iofog.AsCertificateMismatch(err)
	g.Expect(ok).To(BeTrue(), "error: %v", err)
	g.Expect(m.Names).To(ConsistOf("iofog.example.com"))
	g.Expect(m.UnknownAuthority).To(BeFalse())

	// Without names the Controller is verified as the dialled 127.0.0.1, which it does not cover.
	c = newClient(t, controller, iofog.WithRootCAs(pool))
	_, err = c.Status(context.Background())
	_, ok = iofog.AsCertificateMismatch(err)
	g.Expect(ok).To(BeTrue(), "error: %v", err)
}
