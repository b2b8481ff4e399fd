package iofog_test

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

func TestPutDefaultRouter(t *testing.T) {
	tests := []struct {
		name     string
		router   iofog.Router
		wantBody string
		want     iofog.Router
	}{
		{
			name:     "zero ports are omitted and defaulted by the Controller",
			router:   iofog.Router{Host: "10.0.0.1"},
			wantBody: `{"host":"10.0.0.1"}`,
			want:     iofog.Router{Host: "10.0.0.1", MessagingPort: 5671, EdgeRouterPort: 45671, InterRouterPort: 55671},
		},
		{
			name:     "explicit ports",
			router:   iofog.Router{Host: "router.example.com", MessagingPort: 5672, EdgeRouterPort: 45672, InterRouterPort: 55672},
			wantBody: `{"host":"router.example.com","messagingPort":5672,"edgeRouterPort":45672,"interRouterPort":55672}`,
			want:     iofog.Router{Host: "router.example.com", MessagingPort: 5672, EdgeRouterPort: 45672, InterRouterPort: 55672},
		},
		{
			name:     "one port set",
			router:   iofog.Router{Host: "h", InterRouterPort: 1},
			wantBody: `{"host":"h","interRouterPort":1}`,
			want:     iofog.Router{Host: "h", MessagingPort: 5671, EdgeRouterPort: 45671, InterRouterPort: 1},
		},
		{
			name:     "empty host passes the schema",
			router:   iofog.Router{},
			wantBody: `{"host":""}`,
			want:     iofog.Router{MessagingPort: 5671, EdgeRouterPort: 45671, InterRouterPort: 55671},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)
			c, _ := loggedIn(t, srv)

			g.Expect(c.PutDefaultRouter(context.Background(), tt.router)).To(Succeed())

			reqs := srv.RequestsTo(http.MethodPut, "/api/v3/router")
			g.Expect(reqs).To(HaveLen(1))
			g.Expect(reqs[0].Body).To(MatchJSON(tt.wantBody))
			got, ok := srv.Router()
			g.Expect(ok).To(BeTrue())
			g.Expect(*got).To(Equal(tt.want))
		})
	}
}

func TestPutDefaultRouterIsAnUpsert(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c, _ := loggedIn(t, srv)

	g.Expect(c.PutDefaultRouter(context.Background(), iofog.Router{Host: "a"})).To(Succeed())
	g.Expect(c.PutDefaultRouter(context.Background(), iofog.Router{Host: "b", MessagingPort: 1000})).To(Succeed())

	got, _ := srv.Router()
	g.Expect(*got).To(Equal(iofog.Router{Host: "b", MessagingPort: 1000, EdgeRouterPort: 45671, InterRouterPort: 55671}))
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name        string
		call        func(context.Context, *iofog.Client) error
		wantMessage string // empty: any (the Controller dumps the validator error)
	}{
		{
			name: "router negative port",
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.PutDefaultRouter(ctx, iofog.Router{Host: "h", MessagingPort: -1})
			},
			wantMessage: "messagingPort must be greater than or equal to 1",
		},
		{
			name: "router port above 65535",
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.PutDefaultRouter(ctx, iofog.Router{Host: "h", EdgeRouterPort: 70000})
			},
		},
		{
			name: "hub negative port",
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.UpsertNatsHub(ctx, iofog.NatsHub{Host: "h", LeafPort: -5})
			},
			wantMessage: "leafPort must be greater than or equal to 1",
		},
		{
			name: "hub Kubernetes-style size",
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.UpsertNatsHub(ctx, iofog.NatsHub{Host: "h", JsStorageSize: "10Gi"})
			},
			wantMessage: "Invalid format for field 'jsStorageSize'",
		},
		{
			name: "CA without secretName",
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.CreateCA(ctx, iofog.CARequest{Name: "x", Type: iofog.CATypeK8sSecret})
			},
			wantMessage: "Required field 'secretName' is missing",
		},
		{
			name: "CA of unknown type",
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.CreateCA(ctx, iofog.CARequest{Name: "x", Type: "pkcs12", SecretName: "x"})
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)
			c, _ := loggedIn(t, srv)

			err := tt.call(context.Background(), c)

			apiErr := apiError(g, err)
			g.Expect(apiErr.StatusCode).To(Equal(http.StatusBadRequest))
			g.Expect(apiErr.Name).To(Equal("ValidationError"))
			if tt.wantMessage != "" {
				g.Expect(apiErr.Message).To(Equal(tt.wantMessage))
			}
			g.Expect(iofog.IsRetryable(err)).To(BeFalse())
			_, routerSet := srv.Router()
			_, hubSet := srv.Hub()
			g.Expect(routerSet || hubSet).To(BeFalse(), "a rejected upsert stores nothing")
			g.Expect(srv.ImportedCAs()).To(BeEmpty())
		})
	}
}

func TestUpsertNatsHub(t *testing.T) {
	tests := []struct {
		name     string
		hub      iofog.NatsHub
		wantBody string
		want     iofog.NatsHub
	}{
		{
			name:     "defaults",
			hub:      iofog.NatsHub{Host: "10.0.0.2"},
			wantBody: `{"host":"10.0.0.2"}`,
			want: iofog.NatsHub{Host: "10.0.0.2", ServerPort: 4222, ClusterPort: 6222, LeafPort: 7422,
				MqttPort: 8883, HTTPPort: 8222},
		},
		{
			name: "everything explicit",
			hub: iofog.NatsHub{Host: "nats.example.com", ServerPort: 14222, ClusterPort: 16222, LeafPort: 17422,
				MqttPort: 18883, HTTPPort: 18222, JsStorageSize: "10G", JsMemoryStoreSize: "512 mb"},
			wantBody: `{"host":"nats.example.com","serverPort":14222,"clusterPort":16222,"leafPort":17422,` +
				`"mqttPort":18883,"httpPort":18222,"jsStorageSize":"10G","jsMemoryStoreSize":"512 mb"}`,
			want: iofog.NatsHub{Host: "nats.example.com", ServerPort: 14222, ClusterPort: 16222, LeafPort: 17422,
				MqttPort: 18883, HTTPPort: 18222, JsStorageSize: "10G", JsMemoryStoreSize: "512 mb"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)
			c, _ := loggedIn(t, srv)

			g.Expect(c.UpsertNatsHub(context.Background(), tt.hub)).To(Succeed())

			reqs := srv.RequestsTo(http.MethodPut, "/api/v3/nats/hub")
			g.Expect(reqs).To(HaveLen(1))
			g.Expect(reqs[0].Body).To(MatchJSON(tt.wantBody))
			got, ok := srv.Hub()
			g.Expect(ok).To(BeTrue())
			g.Expect(*got).To(Equal(tt.want))
		})
	}
}

func TestNatsBootstrap(t *testing.T) {
	t.Run("default material", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		c, _ := loggedIn(t, srv)

		first, err := c.NatsBootstrap(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		second, err := c.NatsBootstrap(context.Background())
		g.Expect(err).NotTo(HaveOccurred())

		g.Expect(*first).To(Equal(srv.Bootstrap()))
		g.Expect(*second).To(Equal(*first), "the Controller reuses its operator")
		creds, err := first.SysUserCreds()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(creds)).To(HavePrefix("-----BEGIN NATS USER JWT-----\n"))
		g.Expect(string(creds)).To(ContainSubstring("-----BEGIN USER NKEY SEED-----\nSU"))
	})

	t.Run("material set by the test", func(t *testing.T) {
		g := NewWithT(t)
		want := iofog.NatsBootstrap{
			OperatorJwt: "op.jwt.sig", OperatorPublicKey: "OABC", OperatorSeed: "SOABC",
			SystemAccountJwt: "acc.jwt.sig", SystemAccountPublicKey: "AABC",
			SysUserCredsBase64: base64.StdEncoding.EncodeToString([]byte("creds file\n")),
		}
		srv := newFake(t, fake.WithBootstrap(want))
		c, _ := loggedIn(t, srv)

		got, err := c.NatsBootstrap(context.Background())

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(*got).To(Equal(want))
		creds, err := got.SysUserCreds()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(creds)).To(Equal("creds file\n"))
	})

	t.Run("creds that are not base64", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		b := srv.Bootstrap()
		b.SysUserCredsBase64 = "not base64!"
		srv.SetBootstrap(b)
		c, _ := loggedIn(t, srv)

		got, err := c.NatsBootstrap(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		creds, err := got.SysUserCreds()

		g.Expect(creds).To(BeNil())
		g.Expect(err).To(MatchError(iofog.ErrInvalidResponse))
		var corrupt base64.CorruptInputError
		g.Expect(errors.As(err, &corrupt)).To(BeTrue())
	})

	t.Run("URL-safe base64 is rejected", func(t *testing.T) {
		g := NewWithT(t)
		b := iofog.NatsBootstrap{SysUserCredsBase64: base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff})}
		_, err := b.SysUserCreds()
		g.Expect(err).To(MatchError(iofog.ErrInvalidResponse))
	})

	t.Run("empty field", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		b := srv.Bootstrap()
		b.OperatorSeed = ""
		srv.SetBootstrap(b)
		c, _ := loggedIn(t, srv)

		_, err := c.NatsBootstrap(context.Background())

		g.Expect(err).To(MatchError(iofog.ErrInvalidResponse))
		g.Expect(err.Error()).To(ContainSubstring("operatorSeed"))
	})

	t.Run("not the Kubernetes control plane", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		srv.SetKubernetesControlPlane(false)
		c, _ := loggedIn(t, srv)

		_, err := c.NatsBootstrap(context.Background())

		apiErr := apiError(g, err)
		g.Expect(apiErr.StatusCode).To(Equal(http.StatusForbidden))
		g.Expect(apiErr.Name).To(Equal("ForbiddenError"))
		g.Expect(iofog.IsRetryable(err)).To(BeFalse())
	})

	t.Run("secret missing", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		srv.SetBootstrapSecretMissing("nats-operator-seed")
		c, _ := loggedIn(t, srv)

		_, err := c.NatsBootstrap(context.Background())

		g.Expect(err).To(MatchError(iofog.ErrNotFound))
		apiErr := apiError(g, err)
		g.Expect(apiErr.Message).To(Equal(`Secret with name "nats-operator-seed" not found`))
	})
}

func TestImportCA(t *testing.T) {
	const ca = "router-site-ca"
	const postCA = "POST /api/v3/certificates/ca"

	t.Run("imports the Secret's CA under its name", func(t *testing.T) {
		g := NewWithT(t)
		kp := newTestCA(g, ca)
		srv := newFake(t, fake.WithSecretReader(secretsOf(map[string]map[string][]byte{ca: kp})))
		c, _ := loggedIn(t, srv)

		g.Expect(c.ImportCA(context.Background(), ca)).To(Succeed())

		g.Expect(srv.Calls()).To(Equal([]string{postCA}))
		g.Expect(srv.Requests()[0].Body).To(MatchJSON(`{"name":"router-site-ca","type":"k8s-secret","secretName":"router-site-ca"}`))
		info, err := c.GetCA(context.Background(), ca)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Data.Certificate).To(Equal(string(kp["tls.crt"])), "the Controller holds the Secret's CA")
		g.Expect(info.Data.PrivateKey).To(Equal(string(kp["tls.key"])))
	})

	for _, conflictStatus := range []int{http.StatusInternalServerError, http.StatusConflict} {
		t.Run("a second import is ErrConflict: "+http.StatusText(conflictStatus), func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t, fake.WithConflictStatus(conflictStatus))
			g.Expect(srv.ImportCA(ca)).To(Succeed())
			c, _ := loggedIn(t, srv)

			err := c.ImportCA(context.Background(), ca)

			g.Expect(err).To(MatchError(iofog.ErrConflict))
			apiErr := apiError(g, err)
			g.Expect(apiErr.StatusCode).To(Equal(conflictStatus))
			g.Expect(apiErr.Name).To(Equal("ConflictError"))
		})
	}

	t.Run("missing Kubernetes Secret", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t, fake.WithSecretReader(secretsOf(nil)))
		c, _ := loggedIn(t, srv)

		err := c.ImportCA(context.Background(), ca)

		apiErr := apiError(g, err)
		g.Expect(apiErr.StatusCode).To(Equal(http.StatusInternalServerError))
		g.Expect(apiErr.Name).To(Equal("Error"))
		g.Expect(errors.Is(err, iofog.ErrConflict)).To(BeFalse())
		g.Expect(iofog.IsRetryable(err)).To(BeTrue(), "the Secret may appear later")
		g.Expect(srv.ImportedCAs()).To(BeEmpty())
	})
}

func TestDeleteCA(t *testing.T) {
	const ca = "router-site-ca"
	const deleteCA = "DELETE /api/v3/certificates/ca/" + ca

	t.Run("deletes a CA that signed nothing", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		g.Expect(srv.ImportCA(ca)).To(Succeed())
		c, _ := loggedIn(t, srv)

		g.Expect(c.DeleteCA(context.Background(), ca)).To(Succeed())

		g.Expect(srv.Calls()).To(Equal([]string{deleteCA}))
		g.Expect(srv.ImportedCAs()).To(BeEmpty())
		g.Expect(c.DeleteCA(context.Background(), ca)).To(MatchError(iofog.ErrNotFound))
	})

	t.Run("a CA that signed an agent's certificate is refused: ErrCAInUse, not retryable", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		g.Expect(srv.ImportCA(ca)).To(Succeed())
		g.Expect(srv.IssueCertificate("router-site-server-agent-1", ca)).To(Succeed())
		c, _ := loggedIn(t, srv)

		err := c.DeleteCA(context.Background(), ca)

		g.Expect(err).To(MatchError(iofog.ErrCAInUse))
		apiErr := apiError(g, err)
		g.Expect(apiErr.StatusCode).To(Equal(http.StatusInternalServerError), "the route maps ValidationError to nothing: 500")
		g.Expect(apiErr.Name).To(Equal("ValidationError"))
		g.Expect(iofog.IsRetryable(err)).To(BeFalse(), "retrying never helps while the certificate exists")
		g.Expect(srv.ImportedCAs()).To(Equal([]string{ca}))
	})

	t.Run("a 400 ValidationError is ErrCAInUse too", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		g.Expect(srv.ImportCA(ca)).To(Succeed())
		c, _ := loggedIn(t, srv)
		srv.FailNext(deleteCA, fake.Failure{Status: http.StatusBadRequest, Name: "ValidationError", Message: "Cannot delete CA that has signed certificates."})

		err := c.DeleteCA(context.Background(), ca)

		g.Expect(err).To(MatchError(iofog.ErrCAInUse))
		g.Expect(iofog.IsRetryable(err)).To(BeFalse())
	})

	t.Run("any other failure is not ErrCAInUse", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		g.Expect(srv.ImportCA(ca)).To(Succeed())
		c, _ := loggedIn(t, srv)
		srv.FailNext(deleteCA, fake.Failure{Status: http.StatusInternalServerError})

		err := c.DeleteCA(context.Background(), ca)

		g.Expect(errors.Is(err, iofog.ErrCAInUse)).To(BeFalse())
		g.Expect(iofog.IsRetryable(err)).To(BeTrue())
	})
}

// newTestCA returns the data of a kubernetes.io/tls Secret holding a new CA.
func newTestCA(g Gomega, name string) map[string][]byte {
	kp, err := pki.GenerateCA(name, time.Now(), 0)
	g.Expect(err).NotTo(HaveOccurred())
	return pki.SecretData(kp, nil)
}

// secretsOf is a fake.SecretReader over a fixed set of Secrets.
func secretsOf(secrets map[string]map[string][]byte) fake.SecretReader {
	return func(_ context.Context, name string) (map[string][]byte, bool, error) {
		data, ok := secrets[name]
		return data, ok, nil
	}
}

func TestGetCA(t *testing.T) {
	t.Run("imported CA", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		c, _ := loggedIn(t, srv)
		g.Expect(c.ImportCA(context.Background(), "nats-site-ca")).To(Succeed())

		info, err := c.GetCA(context.Background(), "nats-site-ca")

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Name).To(Equal("nats-site-ca"))
		g.Expect(info.IsCA).To(BeTrue())
		g.Expect(info.ValidTo).To(BeTemporally(">", info.ValidFrom))
		g.Expect(info.SerialNumber).To(MatchRegexp(`^[0-9a-f]+$`))
		block, _ := pem.Decode([]byte(info.Data.Certificate))
		g.Expect(block).NotTo(BeNil())
		cert, err := x509.ParseCertificate(block.Bytes)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cert.IsCA).To(BeTrue())
		g.Expect(cert.NotAfter.Equal(info.ValidTo)).To(BeTrue())
		g.Expect(info.Data.PrivateKey).To(HavePrefix("-----BEGIN PRIVATE KEY-----"))
	})

	t.Run("unknown CA", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		c, _ := loggedIn(t, srv)

		info, err := c.GetCA(context.Background(), "default-nats-local-ca")

		g.Expect(info).To(BeNil())
		g.Expect(err).To(MatchError(iofog.ErrNotFound))
		g.Expect(apiError(g, err).Message).To(Equal("CA with name default-nats-local-ca not found"))
		g.Expect(iofog.IsRetryable(err)).To(BeFalse())
	})

	t.Run("name is one escaped path segment", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		c, _ := loggedIn(t, srv)

		_, err := c.GetCA(context.Background(), "a b/c?d")

		// A JSON NotFoundError (not the HTML route 404) proves the route matched.
		g.Expect(apiError(g, err).Name).To(Equal("NotFoundError"))
		g.Expect(srv.Calls()).To(Equal([]string{"GET /api/v3/certificates/ca/a b/c?d"}))
		g.Expect(srv.Requests()[0].RawQuery).To(BeEmpty())
	})

	t.Run("unusable names are refused without a request", func(t *testing.T) {
		g := NewWithT(t)
		srv := newFake(t)
		c, _ := loggedIn(t, srv)
		for _, name := range []string{"", ".", ".."} {
			_, err := c.GetCA(context.Background(), name)
			g.Expect(err).To(HaveOccurred())
		}
		g.Expect(srv.Calls()).To(BeEmpty())
	})
}

// GET /router and GET /nats/hub read a registration back: 404 (ErrNotFound) while the
// Controller holds none, then what PUT stored with the Controller's defaults applied (the
// JetStream sizes are not echoed); both need a token.
func TestReadRegistrationBack(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	ctx := context.Background()
	anonymous := newClient(t, srv)
	_, err := anonymous.GetDefaultRouter(ctx)
	g.Expect(apiError(g, err).StatusCode).To(Equal(http.StatusUnauthorized))

	c, _ := loggedIn(t, srv)
	_, err = c.GetDefaultRouter(ctx)
	g.Expect(err).To(MatchError(iofog.ErrNotFound))
	_, err = c.GetNatsHub(ctx)
	g.Expect(err).To(MatchError(iofog.ErrNotFound))

	g.Expect(c.PutDefaultRouter(ctx, iofog.Router{Host: "r.example.com", MessagingPort: 1000})).To(Succeed())
	g.Expect(c.UpsertNatsHub(ctx, iofog.NatsHub{Host: "n.example.com", LeafPort: 443, JsStorageSize: "10G"})).To(Succeed())
	router, err := c.GetDefaultRouter(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*router).To(Equal(iofog.Router{Host: "r.example.com", MessagingPort: 1000, EdgeRouterPort: 45671, InterRouterPort: 55671}))
	hub, err := c.GetNatsHub(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*hub).To(Equal(iofog.NatsHub{Host: "n.example.com", ServerPort: 4222, ClusterPort: 6222, LeafPort: 443, MqttPort: 8883, HTTPPort: 8222}))
}
