package iofog_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

func TestNewRejectsBadConfiguration(t *testing.T) {
	insecure := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	customRT := &http.Client{Transport: roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("unused")
	})}

	tests := []struct {
		name    string
		baseURL string
		opts    []iofog.Option
	}{
		{name: "not a URL", baseURL: "://nope"},
		{name: "relative", baseURL: "controller:51121"},
		{name: "wrong scheme", baseURL: "ftp://controller:51121"},
		{name: "no host", baseURL: "https://"},
		{name: "user info", baseURL: "https://admin:pw@controller:51121"},
		{name: "query", baseURL: "https://controller:51121?x=1"},
		{name: "zero timeout", baseURL: "https://controller:51121", opts: []iofog.Option{iofog.WithTimeout(0)}},
		{name: "insecure transport", baseURL: "https://controller:51121", opts: []iofog.Option{iofog.WithHTTPClient(insecure)}},
		{name: "root CAs on a custom transport", baseURL: "https://controller:51121",
			opts: []iofog.Option{iofog.WithHTTPClient(customRT), iofog.WithRootCAs(x509.NewCertPool())}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := iofog.New(tt.baseURL, tt.opts...)
			g.Expect(err).To(HaveOccurred())
			g.Expect(c).To(BeNil())
		})
	}
}

func TestNewDoesNoIO(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)

	_, err := iofog.New(srv.URL(), iofog.WithTimeout(time.Second), iofog.WithUserAgent("test"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.Calls()).To(BeEmpty())
}

func TestStatus(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c, _ := loggedIn(t, srv, iofog.WithUserAgent("kubeopera-test/1"))

	st, err := c.Status(context.Background())

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Status).To(Equal(iofog.StatusOnline))
	g.Expect(st.Versions).To(Equal(iofog.ControllerVersions{Controller: "3.7.3", EcnViewer: "1.4.4"}))
	g.Expect(st.Timestamp).To(BeNumerically("~", time.Now().UnixMilli(), 60_000))
	g.Expect(st.UptimeSec).To(BeNumerically(">=", 0))

	g.Expect(srv.Calls()).To(Equal([]string{"GET /api/v3/status"}))
	req := srv.Requests()[0]
	g.Expect(req.Header.Get("Authorization")).To(BeEmpty(), "status is unauthenticated")
	g.Expect(req.Header.Get("Accept")).To(Equal("application/json"))
	g.Expect(req.Header.Get("User-Agent")).To(Equal("kubeopera-test/1"))
	g.Expect(req.Header.Get("Content-Type")).To(BeEmpty(), "GET has no body")
}

func TestBaseURLPathPrefixIsKept(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c, err := iofog.New(srv.URL() + "/prefix/")
	g.Expect(err).NotTo(HaveOccurred())

	_, err = c.Status(context.Background())

	g.Expect(err).To(MatchError(iofog.ErrNotFound))
	g.Expect(srv.Calls()).To(Equal([]string{"GET /prefix/api/v3/status"}))
}

func TestServerErrorsAreRetryableAPIErrors(t *testing.T) {
	tests := []struct {
		name     string
		route    string
		failure  fake.Failure
		call     func(context.Context, *iofog.Client) error
		wantName string
	}{
		{
			name: "status 503", route: "GET /api/v3/status",
			failure: fake.Failure{Status: http.StatusServiceUnavailable, Name: "ServiceUnavailable"},
			call: func(ctx context.Context, c *iofog.Client) error {
				_, err := c.Status(ctx)
				return err
			},
			wantName: "ServiceUnavailable",
		},
		{
			name: "router 500", route: "PUT /api/v3/router", failure: fake.Failure{Status: http.StatusInternalServerError},
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.PutDefaultRouter(ctx, iofog.Router{Host: "10.0.0.1"})
			},
			wantName: "Error",
		},
		{
			name: "hub 502", route: "PUT /api/v3/nats/hub", failure: fake.Failure{Status: http.StatusBadGateway},
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.UpsertNatsHub(ctx, iofog.NatsHub{Host: "10.0.0.2"})
			},
			wantName: "Error",
		},
		{
			name: "bootstrap 500", route: "GET /api/v3/nats/bootstrap", failure: fake.Failure{Status: http.StatusInternalServerError},
			call: func(ctx context.Context, c *iofog.Client) error {
				_, err := c.NatsBootstrap(ctx)
				return err
			},
			wantName: "Error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)
			c, _ := loggedIn(t, srv)
			srv.FailNext(tt.route, tt.failure)

			err := tt.call(context.Background(), c)

			apiErr := apiError(g, err)
			g.Expect(apiErr.StatusCode).To(Equal(tt.failure.Status))
			g.Expect(apiErr.Name).To(Equal(tt.wantName))
			g.Expect(apiErr.Path).To(Equal(strings.SplitN(tt.route, " ", 2)[1]))
			g.Expect(iofog.IsRetryable(err)).To(BeTrue())
			g.Expect(errors.Is(err, iofog.ErrNotFound)).To(BeFalse())
			g.Expect(errors.Is(err, iofog.ErrConflict)).To(BeFalse())

			// The failure was one-shot: the same call now succeeds.
			g.Expect(tt.call(context.Background(), c)).To(Succeed())
		})
	}
}

func TestGarbageBodiesAreInvalidResponses(t *testing.T) {
	huge := append([]byte(`{"status":"`), make([]byte, 2<<20)...)
	tests := []struct {
		name    string
		route   string
		failure fake.Failure
		call    func(context.Context, *iofog.Client) error
	}{
		{
			name: "status html", route: "GET /api/v3/status", failure: fake.Failure{Garbage: true},
			call: func(ctx context.Context, c *iofog.Client) error { _, err := c.Status(ctx); return err },
		},
		{
			name: "status wrong shape", route: "GET /api/v3/status", failure: fake.Failure{Body: []byte(`{"status":42}`)},
			call: func(ctx context.Context, c *iofog.Client) error { _, err := c.Status(ctx); return err },
		},
		{
			name: "status empty object", route: "GET /api/v3/status", failure: fake.Failure{Body: []byte(`{}`)},
			call: func(ctx context.Context, c *iofog.Client) error { _, err := c.Status(ctx); return err },
		},
		{
			name: "status over the size limit", route: "GET /api/v3/status", failure: fake.Failure{Body: huge},
			call: func(ctx context.Context, c *iofog.Client) error { _, err := c.Status(ctx); return err },
		},
		{
			name: "router echo", route: "PUT /api/v3/router", failure: fake.Failure{Garbage: true},
			call: func(ctx context.Context, c *iofog.Client) error {
				return c.PutDefaultRouter(ctx, iofog.Router{Host: "h"})
			},
		},
		{
			name: "bootstrap", route: "GET /api/v3/nats/bootstrap", failure: fake.Failure{Garbage: true},
			call: func(ctx context.Context, c *iofog.Client) error { _, err := c.NatsBootstrap(ctx); return err },
		},
		{
			name: "CA", route: "GET /api/v3/certificates/ca/x", failure: fake.Failure{Body: []byte(`{"validFrom":"yesterday"}`)},
			call: func(ctx context.Context, c *iofog.Client) error { _, err := c.GetCA(ctx, "x"); return err },
		},
		{
			name: "login", route: "POST /api/v3/user/login", failure: fake.Failure{Body: []byte(`{"refreshToken":"r"}`)},
			call: func(ctx context.Context, c *iofog.Client) error {
				_, err := c.Login(ctx, fake.DefaultUsername, fake.DefaultPassword)
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			srv := newFake(t)
			c, _ := loggedIn(t, srv)
			srv.FailNext(tt.route, tt.failure)

			err := tt.call(context.Background(), c)

			g.Expect(err).To(MatchError(iofog.ErrInvalidResponse))
			g.Expect(iofog.IsRetryable(err)).To(BeTrue())
			var apiErr *iofog.APIError
			g.Expect(errors.As(err, &apiErr)).To(BeFalse(), "a 2xx answer is not an APIError")
		})
	}
}

func TestHangingControllerHitsClientTimeout(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c := newClient(t, srv, iofog.WithTimeout(200*time.Millisecond))
	srv.FailNext("GET /api/v3/status", fake.Failure{Hang: true})

	start := time.Now()
	_, err := c.Status(context.Background())

	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
	g.Expect(iofog.IsRetryable(err)).To(BeTrue())
}

func TestCallerDeadlineWins(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c := newClient(t, srv) // default 10 s timeout
	srv.FailNext("GET /api/v3/status", fake.Failure{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()

	start := time.Now()
	_, err := c.Status(ctx)

	g.Expect(err).To(MatchError(context.DeadlineExceeded))
	g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
}

func TestCancelledContextIsNotRetryable(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c := newClient(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := c.Status(ctx)

	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(iofog.IsRetryable(err)).To(BeFalse())
}

func TestConnectionRefusedIsRetryable(t *testing.T) {
	g := NewWithT(t)
	srv := fake.NewServer()
	c := newClient(t, srv)
	srv.Close()

	_, err := c.Status(context.Background())

	g.Expect(err).To(MatchError(syscall.ECONNREFUSED))
	g.Expect(iofog.IsRetryable(err)).To(BeTrue())
}

func TestIsRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "500", err: &iofog.APIError{StatusCode: 500}, want: true},
		{name: "503 wrapped", err: errors.Join(errors.New("x"), &iofog.APIError{StatusCode: 503}), want: true},
		{name: "429", err: &iofog.APIError{StatusCode: 429}, want: true},
		{name: "400", err: &iofog.APIError{StatusCode: 400}, want: false},
		{name: "401", err: &iofog.APIError{StatusCode: 401}, want: false},
		{name: "404", err: &iofog.APIError{StatusCode: 404}, want: false},
		{name: "invalid credentials", err: iofog.ErrInvalidCredentials, want: false},
		{name: "invalid response", err: iofog.ErrInvalidResponse, want: true},
		{name: "deadline", err: context.DeadlineExceeded, want: true},
		{name: "canceled", err: context.Canceled, want: false},
		{name: "unknown authority", err: x509.UnknownAuthorityError{}, want: false},
		{name: "other", err: errors.New("boom"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(iofog.IsRetryable(tt.err)).To(Equal(tt.want))
		})
	}
}

func TestAPIErrorIsMatchesByStatusAndClass(t *testing.T) {
	tests := []struct {
		name         string
		err          *iofog.APIError
		notFound     bool
		wantConflict bool
	}{
		{name: "404 html", err: &iofog.APIError{StatusCode: 404}, notFound: true},
		{name: "404 envelope", err: &iofog.APIError{StatusCode: 404, Name: "NotFoundError"}, notFound: true},
		{name: "NotFoundError name on 500", err: &iofog.APIError{StatusCode: 500, Name: "NotFoundError"}},
		{name: "409", err: &iofog.APIError{StatusCode: 409}, wantConflict: true},
		{name: "500 ConflictError", err: &iofog.APIError{StatusCode: 500, Name: "ConflictError"}, wantConflict: true},
		{name: "500 Error", err: &iofog.APIError{StatusCode: 500, Name: "Error"}},
		{name: "400 ConflictError", err: &iofog.APIError{StatusCode: 400, Name: "ConflictError"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(errors.Is(tt.err, iofog.ErrNotFound)).To(Equal(tt.notFound))
			g.Expect(errors.Is(tt.err, iofog.ErrConflict)).To(Equal(tt.wantConflict))
		})
	}
}

func TestTLS(t *testing.T) {
	srv := fake.NewTLSServer()
	t.Cleanup(srv.Close)

	t.Run("trusting the fake's CA", func(t *testing.T) {
		g := NewWithT(t)
		c := newClient(t, srv, iofog.WithRootCAs(srv.CertPool()))
		st, err := c.Status(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(st.Status).To(Equal(iofog.StatusOnline))
	})

	t.Run("trusting a pool built from its PEM", func(t *testing.T) {
		g := NewWithT(t)
		pool := x509.NewCertPool()
		g.Expect(pool.AppendCertsFromPEM(srv.CertPEM())).To(BeTrue())
		c := newClient(t, srv, iofog.WithRootCAs(pool))
		_, err := c.Status(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
	})

	t.Run("system roots only", func(t *testing.T) {
		g := NewWithT(t)
		srv.Reset()
		c := newClient(t, srv)
		_, err := c.Status(context.Background())
		var unknownAuthority x509.UnknownAuthorityError
		g.Expect(errors.As(err, &unknownAuthority)).To(BeTrue(), "want a verification error, got %v", err)
		g.Expect(iofog.IsRetryable(err)).To(BeFalse())
		g.Expect(srv.Calls()).To(BeEmpty(), "no request may pass an unverified handshake")
	})

	t.Run("injected client gets the root CAs", func(t *testing.T) {
		g := NewWithT(t)
		c := newClient(t, srv, iofog.WithHTTPClient(&http.Client{}), iofog.WithRootCAs(srv.CertPool()))
		_, err := c.Status(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
	})
}

func TestErrorsNeverContainSecrets(t *testing.T) {
	const password = "Pw-Sup3r-S3cret-&-\"quoted\""
	const clientSecret = "cl1ent s3cret+/=&"
	srv := newFake(t, fake.WithCredentials("admin", password), fake.WithOIDCClient("op", clientSecret))
	c, token := loggedIn(t, srv, iofog.WithTimeout(200*time.Millisecond))
	ctx := context.Background()

	errs := map[string]error{}
	_, errs["wrong password"] = c.Login(ctx, "admin", password+"x")

	srv.FailNext("POST /api/v3/user/login", fake.Failure{
		Status: http.StatusBadRequest, Name: "ValidationError", Message: "password " + password + " rejected",
	})
	_, errs["password echoed"] = c.Login(ctx, "admin", password)

	srv.FailNext("POST /oidc/token", fake.Failure{
		Status: http.StatusUnauthorized,
		Body:   []byte(`{"error":"invalid_client","error_description":"secret cl1ent+s3cret%2B%2F%3D%26 and cl1ent s3cret+/=& rejected"}`),
	})
	_, errs["client secret echoed"] = c.LoginClientCredentials(ctx, srv.IssuerURL(), "op", clientSecret)

	srv.FailNext("PUT /api/v3/router", fake.Failure{Status: http.StatusInternalServerError})
	errs["server error with token"] = c.PutDefaultRouter(ctx, iofog.Router{Host: "h"})

	srv.FailNext("GET /api/v3/nats/bootstrap", fake.Failure{Hang: true})
	_, errs["timeout with token"] = c.NatsBootstrap(ctx)

	c.SetToken("unknown-" + token)
	_, errs["rejected token"] = c.GetCA(ctx, "x")

	for name, err := range errs {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(err).To(HaveOccurred())
			for _, secret := range []string{password, clientSecret, "cl1ent+s3cret%2B%2F%3D%26", token} {
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
				var apiErr *iofog.APIError
				if errors.As(err, &apiErr) {
					g.Expect(string(apiErr.Body)).NotTo(ContainSubstring(secret))
					g.Expect(apiErr.Message).NotTo(ContainSubstring(secret))
				}
			}
		})
	}
}

func TestSetTokenIsSafeForConcurrentUse(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	c := newClient(t, srv)
	tokens := []string{srv.IssueToken(), srv.IssueToken()}
	c.SetToken(tokens[0])

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 10 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.SetToken(tokens[i%2])
		}()
		go func() {
			defer wg.Done()
			_, err := c.NatsBootstrap(context.Background())
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
