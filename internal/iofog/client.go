package iofog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

const (
	// DefaultTimeout bounds each call when WithTimeout is not given; it is
	// the timeout the upstream SDK uses.
	DefaultTimeout = 10 * time.Second

	// APIPath is the path prefix of the Controller REST API.
	APIPath = "/api/v3"

	// EmbeddedIssuerPath is where the 3.8+ Controller mounts its embedded OIDC issuer on the API
	// port (the issuer URL is the public URL plus this path); 3.7 serves nothing there.
	EmbeddedIssuerPath = "/oidc"

	// DefaultUserAgent is sent when WithUserAgent is not given.
	DefaultUserAgent = "kubeopera-operator"

	// maxResponseBytes bounds how much of a response body is read.
	maxResponseBytes = 1 << 20
)

// Client calls the Controller REST API. Build it with New. It is safe for
// concurrent use.
type Client struct {
	apiURL     *url.URL
	httpClient *http.Client
	// idpClient sends the identity provider's calls (LoginClientCredentials) when they have a
	// trust of their own (WithIdentityProviderRootCAs); nil means httpClient.
	idpClient *http.Client
	timeout   time.Duration
	userAgent string

	mu    sync.RWMutex
	token string
}

// Option configures a Client in New.
type Option func(*options)

type options struct {
	httpClient  *http.Client
	timeout     time.Duration
	rootCAs     *x509.CertPool
	idpRootCAs  *x509.CertPool
	serverNames []string
	userAgent   string
}

// WithHTTPClient makes the Client send requests through a copy of hc. If hc
// has no CheckRedirect, redirects are not followed. New fails if hc's
// transport is an *http.Transport that skips TLS verification; a custom
// RoundTripper is trusted as given.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *options) { o.httpClient = hc }
}

// WithTimeout bounds every call (connect, request, reading the answer) to d.
// The default is DefaultTimeout. d must be positive.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// WithRootCAs verifies servers against pool instead of the system roots.
// It applies to the Controller, and to the identity provider used by
// LoginClientCredentials unless WithIdentityProviderRootCAs is given; build
// pool from x509.SystemCertPool when both a private and a public CA are
// needed. It requires the transport to be an *http.Transport (the default).
func WithRootCAs(pool *x509.CertPool) Option {
	return func(o *options) { o.rootCAs = pool }
}

// WithIdentityProviderRootCAs verifies the identity provider of
// LoginClientCredentials (its discovery document and token endpoint) against
// pool instead of the Controller's roots: the provider is another server with
// a trust of its own. Its calls then go through a transport of their own,
// without WithServerNames. It requires an *http.Transport (the default).
func WithIdentityProviderRootCAs(pool *x509.CertPool) Option {
	return func(o *options) { o.idpRootCAs = pool }
}

// WithServerNames verifies the Controller's certificate against names instead of the host of the
// base URL, while still dialling that host: the certificate must cover one of them (each is tried
// in turn with crypto/tls's full verification; the first it covers wins). The in-cluster call
// dials the Service but accepts a certificate for the public host; the external reachability
// check dials a load balancer's address and verifies the name clients use. Only connections to
// the base URL's host and port are affected: the identity provider is verified as its own host.
// It requires an *http.Transport (the default).
func WithServerNames(names ...string) Option {
	return func(o *options) { o.serverNames = append([]string(nil), names...) }
}

// WithUserAgent sets the User-Agent header. The default is DefaultUserAgent.
func WithUserAgent(ua string) Option {
	return func(o *options) { o.userAgent = ua }
}

// New returns a Client for the Controller at baseURL, e.g.
// "https://controller.ns.svc.cluster.local:51121"; APIPath is appended. A
// path in baseURL (a reverse-proxy prefix) is kept in front of APIPath.
// New does no I/O.
func New(baseURL string, opts ...Option) (*Client, error) {
	o := options{timeout: DefaultTimeout, userAgent: DefaultUserAgent}
	for _, opt := range opts {
		opt(&o)
	}
	if o.timeout <= 0 {
		return nil, fmt.Errorf("configure controller client: timeout must be positive, got %s", o.timeout)
	}

	apiURL, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, fmt.Errorf("configure controller client: %w", err)
	}
	apiURL.Path = strings.TrimSuffix(apiURL.Path, "/") + APIPath
	apiURL.RawPath = ""

	hc, err := buildHTTPClient(o, hostPort(apiURL))
	if err != nil {
		return nil, fmt.Errorf("configure controller client: %w", err)
	}
	c := &Client{
		apiURL:     apiURL,
		httpClient: hc,
		timeout:    o.timeout,
		userAgent:  o.userAgent,
	}
	if o.idpRootCAs != nil {
		idp := options{httpClient: o.httpClient, rootCAs: o.idpRootCAs}
		if c.idpClient, err = buildHTTPClient(idp, ""); err != nil {
			return nil, fmt.Errorf("configure identity provider client: %w", err)
		}
	}
	return c, nil
}

// SetToken sets the bearer token sent on protected routes. An empty token
// sends no Authorization header (the Controller answers 401).
func (c *Client) SetToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token = token
}

// CloseIdleConnections closes the keep-alive connections the client holds, so a client that is
// dropped does not keep sockets open until the transport's idle timeout.
func (c *Client) CloseIdleConnections() {
	c.httpClient.CloseIdleConnections()
	if c.idpClient != nil {
		c.idpClient.CloseIdleConnections()
	}
}

func (c *Client) bearerToken() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.token
}

// parseBaseURL accepts an absolute http(s) URL without user info, query or
// fragment.
func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("base URL scheme must be http or https, got %q", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("base URL has no host")
	}
	if u.User != nil {
		return nil, errors.New("base URL must not contain user info")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("base URL must not contain a query or fragment")
	}
	return u, nil
}

// buildHTTPClient returns the http.Client for o; controllerAddr (host:port) is
// the Controller's address, the one WithServerNames applies to. TLS
// verification is always on: a transport that skips it is rejected rather
// than silently fixed.
func buildHTTPClient(o options, controllerAddr string) (*http.Client, error) {
	var hc http.Client
	if o.httpClient != nil {
		hc = *o.httpClient
	} else {
		hc.Transport = defaultTransport()
	}
	if hc.CheckRedirect == nil {
		// An API answer is never a redirect; surface one as an error
		// instead of replaying a request (and maybe a token) elsewhere.
		hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}

	if o.rootCAs != nil || len(o.serverNames) > 0 {
		rt := hc.Transport
		if rt == nil {
			rt = defaultTransport()
		}
		t, ok := rt.(*http.Transport)
		if !ok {
			return nil, fmt.Errorf("root CAs and a server name need an *http.Transport, got %T", rt)
		}
		t = t.Clone()
		if t.TLSClientConfig == nil {
			t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if o.rootCAs != nil {
			t.TLSClientConfig.RootCAs = o.rootCAs
		}
		if len(o.serverNames) > 0 {
			t.DialTLSContext = serverNamesDialer(t, controllerAddr, o.serverNames)
		}
		hc.Transport = t
	}

	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if t, ok := rt.(*http.Transport); ok && t.TLSClientConfig != nil && t.TLSClientConfig.InsecureSkipVerify {
		return nil, errors.New("TLS verification cannot be disabled")
	}
	hc.Transport = metrics.ControllerAPITransport(rt)
	return &hc, nil
}

func defaultTransport() *http.Transport {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return &http.Transport{
			Proxy:           http.ProxyFromEnvironment,
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12},
		}
	}
	t := base.Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return t
}

// hostPort is u's host and port, the port defaulted from the scheme.
func hostPort(u *url.URL) string {
	if port := u.Port(); port != "" {
		return net.JoinHostPort(u.Hostname(), port)
	}
	if u.Scheme == "http" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return net.JoinHostPort(u.Hostname(), "443")
}

// serverNamesDialer is the TLS dialer of WithServerNames: for controllerAddr it verifies the
// server's certificate against each of names in turn (a new connection per name, the full
// crypto/tls verification with t's TLS settings) and returns the first connection whose
// certificate covers one; any other address is verified as its own host. A certificate that
// covers none of the names fails with the last name's error, so AsCertificateMismatch still
// reports the certificate's names.
func serverNamesDialer(t *http.Transport, controllerAddr string, names []string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	base := t.TLSClientConfig
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	handshake := func(ctx context.Context, network, addr, serverName string) (net.Conn, error) {
		raw, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := base.Clone()
		cfg.ServerName = serverName
		conn := tls.Client(raw, cfg)
		if err := conn.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, err
		}
		return conn, nil
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != controllerAddr {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			return handshake(ctx, network, addr, host)
		}
		var last error
		for _, name := range names {
			conn, err := handshake(ctx, network, addr, name)
			if err == nil {
				return conn, nil
			}
			last = err
			var hostErr x509.HostnameError
			if !errors.As(err, &hostErr) {
				return nil, err // not a name mismatch: another name cannot help
			}
		}
		return nil, last
	}
}
