package iofog_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// GET /certificates lists each certificate with the CA that signed it; DELETE /certificates/{name}
// releases that CA.
func TestListAndDeleteCertificates(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := newFake(t)
	c, _ := loggedIn(t, srv)
	g.Expect(srv.ProvisionAgent("edge", true)).To(Succeed())

	got, err := c.ListCertificates(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]iofog.Certificate{
		{Name: "router-site-ca", Subject: "router-site-ca", IsCA: true},
		{Name: "default-router-local-ca", Subject: "default-router-local-ca", IsCA: true},
		{Name: "router-local-agent-edge", Subject: "router-local-agent-edge", CAName: "default-router-local-ca"},
	}))
	g.Expect(c.DeleteCA(ctx, "default-router-local-ca")).To(MatchError(iofog.ErrCAInUse))
	g.Expect(c.DeleteCertificate(ctx, "router-local-agent-edge")).To(Succeed())
	g.Expect(c.DeleteCertificate(ctx, "router-local-agent-edge")).To(MatchError(iofog.ErrNotFound))
	g.Expect(c.DeleteCA(ctx, "default-router-local-ca")).To(Succeed())

	srv.FailNext("GET /api/v3/certificates", fake.Failure{Body: []byte(`{}`)})
	_, err = c.ListCertificates(ctx)
	g.Expect(err).To(MatchError(iofog.ErrInvalidResponse))
	srv.FailNext("GET /api/v3/certificates", fake.Failure{Body: []byte(`{"certificates":[{"isCA":true}]}`)})
	_, err = c.ListCertificates(ctx)
	g.Expect(err).To(MatchError(iofog.ErrInvalidResponse))
	_, err = newClient(t, srv).ListCertificates(ctx)
	g.Expect(apiError(g, err).StatusCode).To(Equal(http.StatusUnauthorized))
}
