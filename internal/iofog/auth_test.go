package iofog_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

func TestLogin(t *testing.T) {
	const password = "b00tstrap-pw"
	tests := []struct {
		name       string
		username   string
		password   string
		wantStatus int // 0: success
		wantName   string
	}{
		{name: "bootstrap admin", username: "admin", password: password},
		{name: "wrong password", username: "admin", password: "nope", wantStatus: 401, wantName: "InvalidCredentialsError"},
		{name: "unknown user", username: "root", password: password, wantStatus: 401, wantName: "InvalidCredentialsError"},
		{name: "empty username fails the schema", username: "", password: password, wantStatus: 400, wantName: "ValidationError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t, fake.WithCredentials("admin", password))
			c, _ := loggedIn(t, srv) // a token is set, and must not be sent

			tokens, err := c.Login(context.Background(), tt.username, tt.password)

			reqs := srv.RequestsTo(http.MethodPost, "/api/v3/user/login")
			g.Expect(reqs).To(HaveLen(1))
			g.Expect(reqs[0].Header.Get("Authorization")).To(BeEmpty())
			g.Expect(reqs[0].Header.Get("Content-Type")).To(Equal("application/json"))
			g.Expect(reqs[0].Body).To(MatchJSON(`{"email":"` + tt.username + `","password":"` + tt.password + `"}`))

			if tt.wantStatus == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(tokens.AccessToken).NotTo(BeEmpty())
				g.Expect(tokens.RefreshToken).NotTo(BeEmpty())
				// The issued token opens protected routes.
				c.SetToken(tokens.AccessToken)
				_, err = c.NatsBootstrap(context.Background())
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(tokens).To(BeNil())
			g.Expect(err).To(MatchError(iofog.ErrInvalidCredentials))
			apiErr := apiError(g, err)
			g.Expect(apiErr.StatusCode).To(Equal(tt.wantStatus))
			g.Expect(apiErr.Name).To(Equal(tt.wantName))
			g.Expect(iofog.IsRetryable(err)).To(BeFalse())
			g.Expect(err.Error()).NotTo(ContainSubstring(password))
		})
	}
}

func TestLoginServerErrorIsNotInvalidCredentials(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c := newClient(t, srv)
	srv.FailNext("POST /api/v3/user/login", fake.Failure{Status: http.StatusInternalServerError})

	_, err := c.Login(context.Background(), fake.DefaultUsername, fake.DefaultPassword)

	g.Expect(err).NotTo(MatchError(iofog.ErrInvalidCredentials))
	g.Expect(iofog.IsRetryable(err)).To(BeTrue())
}

func TestLoginClientCredentials(t *testing.T) {
	const clientID = "kubeopera op"
	const clientSecret = "s3cr&t=+ %/ü"

	t.Run("discovery then client_credentials grant", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t, fake.WithOIDCClient(clientID, clientSecret))
		c, _ := loggedIn(t, srv) // the Controller token must not go to the IdP

		token, err := c.LoginClientCredentials(context.Background(), srv.IssuerURL(), clientID, clientSecret)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(token).NotTo(BeEmpty())
		g.Expect(srv.Calls()).To(Equal([]string{
			"GET /oidc/.well-known/openid-configuration",
			"POST /oidc/token",
		}))
		for _, req := range srv.Requests() {
			g.Expect(req.Header.Get("Authorization")).To(BeEmpty())
		}
		tokenReq := srv.Requests()[1]
		g.Expect(tokenReq.Header.Get("Content-Type")).To(Equal("application/x-www-form-urlencoded"))
		form, err := url.ParseQuery(string(tokenReq.Body))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(form).To(Equal(url.Values{
			"grant_type":    {"client_credentials"},
			"client_id":     {clientID},
			"client_secret": {clientSecret},
		}))

		c.SetToken(token)
		g.Expect(c.PutDefaultRouter(context.Background(), iofog.Router{Host: "r"})).To(Succeed())
	})

	t.Run("issuer with a trailing slash", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t, fake.WithOIDCClient(clientID, clientSecret))
		c := newClient(t, srv)

		_, err := c.LoginClientCredentials(context.Background(), srv.IssuerURL()+"/", clientID, clientSecret)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(srv.Calls()[0]).To(Equal("GET /oidc/.well-known/openid-configuration"))
	})

	t.Run("rejected client", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t, fake.WithOIDCClient(clientID, clientSecret))
		c := newClient(t, srv)

		_, err := c.LoginClientCredentials(context.Background(), srv.IssuerURL(), clientID, "wrong")

		g.Expect(err).To(MatchError(iofog.ErrInvalidCredentials))
		apiErr := apiError(g, err)
		g.Expect(apiErr.StatusCode).To(Equal(http.StatusUnauthorized))
		g.Expect(apiErr.Name).To(Equal("invalid_client"))
		g.Expect(iofog.IsRetryable(err)).To(BeFalse())
	})

	t.Run("no discovery document", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		c := newClient(t, srv)

		_, err := c.LoginClientCredentials(context.Background(), srv.URL()+"/elsewhere", clientID, clientSecret)

		g.Expect(err).To(MatchError(iofog.ErrNotFound))
		g.Expect(err).NotTo(MatchError(iofog.ErrInvalidCredentials))
		g.Expect(srv.Calls()).To(Equal([]string{"GET /elsewhere/.well-known/openid-configuration"}))
	})

	t.Run("discovery without token_endpoint", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		c := newClient(t, srv)
		srv.FailNext("GET /oidc/.well-known/openid-configuration", fake.Failure{Body: []byte(`{"issuer":"x"}`)})

		_, err := c.LoginClientCredentials(context.Background(), srv.IssuerURL(), clientID, clientSecret)

		g.Expect(err).To(MatchError(iofog.ErrInvalidResponse))
		g.Expect(srv.Calls()).To(HaveLen(1))
	})

	t.Run("https issuer pointing to an http token endpoint", func(t *testing.T) {
		g := NewWithT(t)
		srv := fake.NewTLSServer()
		t.Cleanup(srv.Close)
		c := newClient(t, srv, iofog.WithRootCAs(srv.CertPool()))
		srv.FailNext("GET /oidc/.well-known/openid-configuration", fake.Failure{
			Body: []byte(`{"token_endpoint":"http://` + srv.URL()[len("https://"):] + `/oidc/token"}`),
		})

		_, err := c.LoginClientCredentials(context.Background(), srv.IssuerURL(), clientID, clientSecret)

		g.Expect(err).To(MatchError(iofog.ErrInvalidResponse))
		g.Expect(srv.Calls()).To(Equal([]string{"GET /oidc/.well-known/openid-configuration"}),
			"the secret must not be sent in clear text")
	})
}

func TestProtectedRoutesWithoutValidToken(t *testing.T) {
	calls := map[string]func(context.Context, *iofog.Client) error{
		"PUT /router": func(ctx context.Context, c *iofog.Client) error {
			return c.PutDefaultRouter(ctx, iofog.Router{Host: "h"})
		},
		"PUT /nats/hub": func(ctx context.Context, c *iofog.Client) error {
			return c.UpsertNatsHub(ctx, iofog.NatsHub{Host: "h"})
		},
		"GET /nats/bootstrap": func(ctx context.Context, c *iofog.Client) error {
			_, err := c.NatsBootstrap(ctx)
			return err
		},
		"GET /certificates/ca/x": func(ctx context.Context, c *iofog.Client) error {
			_, err := c.GetCA(ctx, "x")
			return err
		},
		"POST /certificates/ca": func(ctx context.Context, c *iofog.Client) error {
			return c.CreateCA(ctx, iofog.CARequest{Name: "x", Type: iofog.CATypeK8sSecret, SecretName: "x"})
		},
	}
	tokens := map[string]func(*fake.Server) string{
		"no token":      func(*fake.Server) string { return "" },
		"unknown token": func(*fake.Server) string { return "forged" },
		"revoked token": func(s *fake.Server) string {
			tok := s.IssueToken()
			s.RevokeTokens()
			return tok
		},
	}
	for route, call := range calls {
		for kind, token := range tokens {
			t.Run(route+" with "+kind, func(t *testing.T) {
				g := NewWithT(t)
				srv := newFake(t)
				c := newClient(t, srv)
				c.SetToken(token(srv))

				err := call(context.Background(), c)

				apiErr := apiError(g, err)
				g.Expect(apiErr.StatusCode).To(Equal(http.StatusUnauthorized))
				g.Expect(apiErr.Name).To(Equal("Unauthorized: No authentication information found"))
				g.Expect(errors.Is(err, iofog.ErrNotFound)).To(BeFalse(), "401 comes before 404")
				g.Expect(iofog.IsRetryable(err)).To(BeFalse())
				_, routerSet := srv.Router()
				g.Expect(routerSet).To(BeFalse())
				g.Expect(srv.ImportedCAs()).To(BeEmpty())
			})
		}
	}
}

func TestForbiddenToken(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c, _ := loggedIn(t, srv)
	srv.SetForbidden("Password change required before accessing this resource")

	err := c.PutDefaultRouter(context.Background(), iofog.Router{Host: "h"})

	apiErr := apiError(g, err)
	g.Expect(apiErr.StatusCode).To(Equal(http.StatusForbidden))
	g.Expect(apiErr.Name).To(Equal("Forbidden"))
	g.Expect(apiErr.Message).To(Equal("Password change required before accessing this resource"))
	g.Expect(iofog.IsRetryable(err)).To(BeFalse())
}

func TestAuthorizationHeaderOnProtectedCallsOnly(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c := newClient(t, srv)
	ctx := context.Background()

	_, err := c.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	tokens, err := c.Login(ctx, fake.DefaultUsername, fake.DefaultPassword)
	g.Expect(err).NotTo(HaveOccurred())
	c.SetToken(tokens.AccessToken)
	_, err = c.Status(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.PutDefaultRouter(ctx, iofog.Router{Host: "r"})).To(Succeed())
	g.Expect(c.UpsertNatsHub(ctx, iofog.NatsHub{Host: "n"})).To(Succeed())
	_, err = c.NatsBootstrap(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.GetCA(ctx, "router-site-ca")
	g.Expect(err).To(MatchError(iofog.ErrNotFound))
	g.Expect(c.ImportCA(ctx, "router-site-ca")).To(Succeed())
	g.Expect(c.DeleteCA(ctx, "router-site-ca")).To(Succeed())

	g.Expect(srv.Calls()).To(Equal([]string{
		"GET /api/v3/status",
		"POST /api/v3/user/login",
		"GET /api/v3/status",
		"PUT /api/v3/router",
		"PUT /api/v3/nats/hub",
		"GET /api/v3/nats/bootstrap",
		"GET /api/v3/certificates/ca/router-site-ca",
		"POST /api/v3/certificates/ca",
		"DELETE /api/v3/certificates/ca/router-site-ca",
	}))
	for _, req := range srv.Requests() {
		g.Expect(req.Header.Get("Accept")).To(Equal("application/json"), req.Call())
		switch req.Path {
		case "/api/v3/status", "/api/v3/user/login":
			g.Expect(req.Header.Values("Authorization")).To(BeEmpty(), req.Call())
		default:
			g.Expect(req.Header.Values("Authorization")).To(Equal([]string{"Bearer " + tokens.AccessToken}), req.Call())
		}
		if req.Method == http.MethodGet || req.Method == http.MethodDelete {
			g.Expect(req.Header.Get("Content-Type")).To(BeEmpty(), req.Call())
		} else {
			g.Expect(req.Header.Get("Content-Type")).To(Equal("application/json"), req.Call())
		}
	}
}

// The identity provider has a trust of its own: with WithIdentityProviderRootCAs its discovery
// document and token endpoint are verified against that pool only, the Controller against its
// roots only; without it the provider's private CA is not trusted and the login fails TLS
// verification (not retryable), before any credential is sent.
func TestIdentityProviderRootCAs(t *testing.T) {
	g := NewWithT(t)
	controller := fake.NewTLSServer()
	t.Cleanup(controller.Close)
	ca, err := pki.GenerateCA("idp-test-ca", time.Now(), 0)
	g.Expect(err).NotTo(HaveOccurred())
	leaf, err := pki.GenerateLeaf(ca, "idp", []string{"127.0.0.1"}, time.Now(), 0)
	g.Expect(err).NotTo(HaveOccurred())
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	idp := fake.NewIdentityProvider(controller, cert)
	t.Cleanup(idp.Close)
	idpRoots := x509.NewCertPool()
	idpRoots.AddCert(ca.Cert)

	t.Run("trusted through its own pool", func(t *testing.T) {
		g := NewWithT(t)
		c := newClient(t, controller, iofog.WithRootCAs(controller.CertPool()), iofog.WithIdentityProviderRootCAs(idpRoots))
		token, err := c.LoginClientCredentials(context.Background(), idp.IssuerURL(), fake.DefaultClientID, fake.DefaultClientSecret)
		g.Expect(err).NotTo(HaveOccurred())
		c.SetToken(token)
		g.Expect(c.PutDefaultRouter(context.Background(), iofog.Router{Host: "r"})).To(Succeed(), "the Controller accepts the provider's token")
		c.CloseIdleConnections()
	})

	t.Run("not trusted with the Controller's roots", func(t *testing.T) {
		g := NewWithT(t)
		before := len(idp.Calls())
		c := newClient(t, controller, iofog.WithRootCAs(controller.CertPool()))
		_, err := c.LoginClientCredentials(context.Background(), idp.IssuerURL(), fake.DefaultClientID, fake.DefaultClientSecret)
		g.Expect(err).To(HaveOccurred())
		m, ok := iofog.AsCertificateMismatch(err)
		g.Expect(ok).To(BeTrue(), "a verification failure: %v", err)
		g.Expect(m.UnknownAuthority).To(BeTrue())
		g.Expect(iofog.IsRetryable(err)).To(BeFalse())
		g.Expect(idp.Calls()).To(HaveLen(before), "no request passed the handshake")
	})

	t.Run("the provider's pool does not open the Controller", func(t *testing.T) {
		g := NewWithT(t)
		c := newClient(t, controller, iofog.WithIdentityProviderRootCAs(idpRoots))
		_, err := c.Status(context.Background())
		_, ok := iofog.AsCertificateMismatch(err)
		g.Expect(ok).To(BeTrue(), "the Controller is verified with its own roots: %v", err)
	})
}
