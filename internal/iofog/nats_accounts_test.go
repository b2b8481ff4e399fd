package iofog_test

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// GET /nats/accounts lists the system account of the bootstrap first, then the accounts the
// Controller created, with the fields of the Controller's listAccounts.
func TestNatsAccounts(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c, _ := loggedIn(t, srv)
	app := 3
	g.Expect(srv.AddNatsAccount(context.Background(), iofog.NatsAccount{Name: "app-a", PublicKey: "AAPP", JWT: "app.jwt", ApplicationID: &app})).To(Succeed())
	g.Expect(srv.AddNatsAccount(context.Background(), iofog.NatsAccount{Name: "leaf-sys-edge", PublicKey: "ALEAF", JWT: "leaf.jwt", IsLeafSystem: true})).To(Succeed())

	got, err := c.NatsAccounts(context.Background())

	g.Expect(err).NotTo(HaveOccurred())
	b := srv.Bootstrap()
	g.Expect(got).To(Equal([]iofog.NatsAccount{
		{ID: 1, Name: "SYS", PublicKey: b.SystemAccountPublicKey, JWT: b.SystemAccountJwt, IsSystem: true},
		{ID: 2, Name: "app-a", PublicKey: "AAPP", JWT: "app.jwt", ApplicationID: &app},
		{ID: 3, Name: "leaf-sys-edge", PublicKey: "ALEAF", JWT: "leaf.jwt", IsLeafSystem: true},
	}))
	g.Expect(got[0].InHubBundle()).To(BeTrue())
	g.Expect(got[1].InHubBundle()).To(BeTrue())
	g.Expect(got[2].InHubBundle()).To(BeFalse(), "a leaf node's system account belongs to that leaf")
	reqs := srv.RequestsTo(http.MethodGet, "/api/v3/nats/accounts")
	g.Expect(reqs).To(HaveLen(1))
	g.Expect(reqs[0].Header.Get("Authorization")).To(HavePrefix("Bearer "))

	srv.Wipe()
	got, err = c.NatsAccounts(context.Background())
	g.Expect(err).To(HaveOccurred(), "a wiped Controller forgot the token")
	g.Expect(got).To(BeNil())
}

func TestNatsAccountsErrors(t *testing.T) {
	cases := map[string]struct {
		failure fake.Failure
		want    error
	}{
		"no list":             {failure: fake.Failure{Body: []byte(`{}`)}, want: iofog.ErrInvalidResponse},
		"account without JWT": {failure: fake.Failure{Body: []byte(`{"accounts":[{"id":1,"name":"SYS","publicKey":"ASYS","jwt":""}]}`)}, want: iofog.ErrInvalidResponse},
		"not JSON":            {failure: fake.Failure{Garbage: true}, want: iofog.ErrInvalidResponse},
		"an older Controller": {failure: fake.Failure{Status: http.StatusNotFound}, want: iofog.ErrNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)
			c, _ := loggedIn(t, srv)
			srv.FailNext("GET /api/v3/nats/accounts", tc.failure)

			got, err := c.NatsAccounts(context.Background())

			g.Expect(err).To(MatchError(tc.want))
			g.Expect(got).To(BeNil())
		})
	}

	g := NewWithT(t)
	srv := newFake(t)
	_, err := newClient(t, srv).NatsAccounts(context.Background())
	g.Expect(apiError(g, err).StatusCode).To(Equal(http.StatusUnauthorized), "the route is protected")
}

// GET /nats/operator answers the operator the Controller holds; a rotation changes it.
func TestNatsOperator(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c, _ := loggedIn(t, srv)

	got, err := c.NatsOperator(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	b := srv.Bootstrap()
	g.Expect(*got).To(Equal(iofog.NatsOperator{Name: "iofog-operator", PublicKey: b.OperatorPublicKey, JWT: b.OperatorJwt}))
	reqs := srv.RequestsTo(http.MethodGet, "/api/v3/nats/operator")
	g.Expect(reqs).To(HaveLen(1))
	g.Expect(reqs[0].Header.Get("Authorization")).To(HavePrefix("Bearer "))

	g.Expect(srv.RotateNatsOperator(context.Background())).To(Succeed())
	rotated, err := c.NatsOperator(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rotated.PublicKey).NotTo(Equal(got.PublicKey))
	g.Expect(rotated.PublicKey).To(Equal(srv.Bootstrap().OperatorPublicKey))

	for name, tc := range map[string]struct {
		failure fake.Failure
		want    error
	}{
		"no key":              {failure: fake.Failure{Body: []byte(`{"name":"iofog-operator","jwt":"x"}`)}, want: iofog.ErrInvalidResponse},
		"not JSON":            {failure: fake.Failure{Garbage: true}, want: iofog.ErrInvalidResponse},
		"an older Controller": {failure: fake.Failure{Status: http.StatusNotFound}, want: iofog.ErrNotFound},
	} {
		srv.FailNext("GET /api/v3/nats/operator", tc.failure)
		got, err := c.NatsOperator(context.Background())
		g.Expect(err).To(MatchError(tc.want), name)
		g.Expect(got).To(BeNil(), name)
	}
	_, err = newClient(t, srv).NatsOperator(context.Background())
	g.Expect(apiError(g, err).StatusCode).To(Equal(http.StatusUnauthorized), "the route is protected")
}
