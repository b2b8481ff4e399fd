// Package fake is an in-process stand-in for the ioFog/Datasance Controller
// REST API (3.7.x, with the v3.8 embedded/external login), built on
// net/http/httptest. It follows shared/spec/controller-api.md: the same
// routes, status codes, error envelopes, validation order and quirks (a
// duplicate CA import answers 500 ConflictError), and it records every
// request so tests can assert order, headers and bodies.
//
// Served routes:
//
//	GET  /api/v3/status                          (no auth)
//	POST /api/v3/user/login                      (no auth; embedded mode)
//	GET  /oidc/.well-known/openid-configuration  (issuer = URL()+"/oidc")
//	POST /oidc/token                             (client_credentials)
//	PUT  /api/v3/router, GET /api/v3/router
//	PUT  /api/v3/nats/hub, GET /api/v3/nats/hub
//	GET  /api/v3/nats/bootstrap
//	GET  /api/v3/nats/operator, POST /api/v3/nats/operator/rotate
//	GET  /api/v3/nats/accounts
//	GET  /api/v3/certificates/ca/{name}, DELETE /api/v3/certificates/ca/{name}
//	POST /api/v3/certificates/ca
//	GET /api/v3/certificates, DELETE /api/v3/certificates/{name}
//
// The embedded login locks the account after 5 wrong passwords in a row for
// 15 minutes (controller-api.md, "Login lockout"), on the clock WithClock
// sets; a success or the end of a lock clears the count. The count is not
// windowed: the stricter reading of the contract. Wipe keeps it.
//
// Everything else answers Express' HTML 404 "Cannot METHOD /path". Bearer
// tokens are random opaque strings issued by the login and token routes
// (not JWTs); protected routes accept only those.
//
// Known simplifications: paths are case-sensitive (Express is not); a body
// that is not JSON answers 400 ValidationError (the real body-parser error
// page is not specified); CA import of type "direct" behaves like
// "k8s-secret" without the Kubernetes check; without a SecretReader
// (WithSecretReader) CA material is a freshly generated ECDSA CA, not the
// content of a real Secret; the certificates the Controller signs under a CA
// for its agents are recorded with IssueCertificate, not by provisioning
// agents; validation messages the contract does not spell out are
// approximations (match on status and name, not text).
//
// GET /status reports the uptime of one Controller pod; SetPods makes a
// Deployment of several pods on one database, answering /status in turn as a
// Service does (controller-api.md, "Several replicas"), and RestartPod
// restarts one of them. IdentityProvider is an external OIDC identity
// provider, over HTTPS, issuing tokens this Controller accepts.
//
// Like the Controller, the fake keeps its database (router, NATS hub, NATS
// operator and accounts, CAs and the certificates they signed) in a directory when given one (Restart): a
// restart with the same directory finds it again, a restart with another one
// starts empty. SQLiteStorageDir says which directory the 3.8+ image uses.
package fake

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// Defaults for the configurable credentials. They only open this fake.
const (
	DefaultUsername     = "admin"
	DefaultPassword     = "fake-bootstrap-password" //nolint:gosec // Test double credential, not a secret.
	DefaultClientID     = "kubeopera-operator"
	DefaultClientSecret = "fake-client-secret" //nolint:gosec // Test double credential, not a secret.
)

// maxBodyBytes is the request body limit (Express' json() default is
// 100 kB; anything legitimate here is far smaller).
const maxBodyBytes = 1 << 20

// Request is one recorded request.
type Request struct {
	// Method is the HTTP method.
	Method string
	// Path is the decoded URL path, e.g. /api/v3/router.
	Path string
	// RawQuery is the encoded query string without '?'.
	RawQuery string
	// Header is a copy of the request headers.
	Header http.Header
	// Body is the request body (up to 1 MiB).
	Body []byte
}

// Call returns the compact "METHOD /path" form used by Calls.
func (r Request) Call() string { return r.Method + " " + r.Path }

// Server is a fake Controller. Create it with NewServer or NewTLSServer and
// Close it when done. All methods are safe for concurrent use.
type Server struct {
	srv    *httptest.Server
	closed chan struct{}
	once   sync.Once
	// tlsCert is the certificate WithTLSCertificate set, if any.
	tlsCert *tls.Certificate

	mu sync.Mutex
	// pods are the start times of the Controller's pods (one by default); GET /status is
	// answered by each in turn, nextPod being the next to answer.
	pods                   []time.Time
	nextPod                int
	extra                  []*http.Server
	username, password     string
	clientID, clientSecret string
	tokens                 map[string]struct{}
	forbidden              string
	now                    func() time.Time
	lockouts               map[string]*lockout
	notKubernetes          bool
	bootstrap              *iofog.NatsBootstrap // the NATS operator of the database; nil: none yet
	bootstrapMissingSecret string
	knownSecrets           map[string]struct{} // nil: every Secret exists
	secrets                SecretReader        // nil: k8s-secret imports store a stand-in
	dataDir                string              // "": the database lives in memory only
	conflictStatus         int
	router                 *iofog.Router
	routerCreatedAt        string
	hub                    *iofog.NatsHub
	accounts               []iofog.NatsAccount
	kube                   *kubernetesTarget
	cas                    []caRecord
	once1                  []failureRule
	always                 []failureRule
	requests               []Request
}

// Option configures a Server in NewServer and NewTLSServer.
type Option func(*Server)

// WithCredentials sets the embedded-mode bootstrap username and password
// accepted by POST /user/login.
func WithCredentials(username, password string) Option {
	return func(s *Server) { s.username, s.password = username, password }
}

// WithClock makes the login lockout read the time from now instead of the
// wall clock, so that a test can let the 15-minute lock pass without
// waiting.
func WithClock(now func() time.Time) Option {
	return func(s *Server) { s.now = now }
}

// WithOIDCClient sets the client id and secret accepted by POST /oidc/token.
func WithOIDCClient(id, secret string) Option {
	return func(s *Server) { s.clientID, s.clientSecret = id, secret }
}

// WithBootstrap sets the NATS operator material the database starts with (the GET
// /nats/bootstrap answer); without it, the first NATS call creates new material.
func WithBootstrap(b iofog.NatsBootstrap) Option {
	return func(s *Server) { s.bootstrap = &b }
}

// WithKnownSecrets restricts the Kubernetes Secrets a k8s-secret CA import
// can read to names; by default every name exists.
func WithKnownSecrets(names ...string) Option {
	return func(s *Server) { s.knownSecrets = nameSet(names) }
}

// WithConflictStatus sets the status of a duplicate CA import: 500 (the
// default, Controller 3.7.x) or 409 (the documented intent).
func WithConflictStatus(status int) Option {
	return func(s *Server) { s.conflictStatus = status }
}

// WithTLSCertificate makes NewTLSServer (and every address added with
// Listen) serve cert instead of httptest's self-signed certificate, e.g. a
// certificate issued by a test CA for the names a test dials.
func WithTLSCertificate(cert tls.Certificate) Option {
	return func(s *Server) { s.tlsCert = &cert }
}

// NewServer starts a fake Controller over plain HTTP.
func NewServer(opts ...Option) *Server {
	s := newServer(opts)
	s.srv = httptest.NewServer(s)
	return s
}

// NewTLSServer starts a fake Controller over HTTPS with a self-signed
// certificate valid for 127.0.0.1 and example.com. Configure clients with
// CertPool or CertPEM.
func NewTLSServer(opts ...Option) *Server {
	s := newServer(opts)
	s.srv = httptest.NewUnstartedServer(s)
	if s.tlsCert != nil {
		s.srv.TLS = &tls.Config{Certificates: []tls.Certificate{*s.tlsCert}, MinVersion: tls.VersionTLS12}
	}
	s.srv.StartTLS()
	return s
}

// Listen serves the same Controller (same state, same request log, same
// scheme and certificate) on addr as well, e.g. a loopback address that a
// test assigns to a LoadBalancer Service, so that the operator dials the
// address it computes. It returns the address listened on.
func (s *Server) Listen(addr string) (string, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return "", err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	if s.srv.TLS != nil {
		hs.TLSConfig = s.srv.TLS.Clone()
		l = tls.NewListener(l, hs.TLSConfig)
	}
	s.mu.Lock()
	s.extra = append(s.extra, hs)
	s.mu.Unlock()
	go func() { _ = hs.Serve(l) }()
	return l.Addr().String(), nil
}

// SetStartedAt sets when every Controller process started (GET /status
// reports the uptime since then), e.g. an hour ago, so that a later Wipe is
// a visibly new process.
func (s *Server) SetStartedAt(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.pods {
		s.pods[i] = t
	}
}

// SetPods makes the Controller a Deployment of len(starts) pods, pod i
// started at starts[i], on one database (replicas > 1 need an external one).
// GET /status through the Service is answered by any pod, each with its own
// uptime (controller-api.md, "Several replicas"): the fake answers with each
// pod in turn. Every other route sees the one database.
func (s *Server) SetPods(starts ...time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = append([]time.Time(nil), starts...)
	s.nextPod = 0
}

// RestartPod restarts pod i of SetPods: a new process started now on the
// same (external) database, so the router, hub, CAs and issued tokens stay.
func (s *Server) RestartPod(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[i] = time.Now()
}

// Wipe makes the fake a Controller that restarted on an empty database:
// the router, the NATS hub, the NATS operator (the next NATS call makes a new
// one), the NATS accounts added with AddNatsAccount, the CA catalog and the
// issued tokens are forgotten, and the uptime starts again.
// Requests, failures and configuration are kept; the database lives in memory
// from now on.
func (s *Server) Wipe() {
	_ = s.Restart("") // an empty directory has nothing to read
}

// Restart makes the fake a Controller process that started now with its
// database in directory dataDir (the image's SQLITE_STORAGE_DIR, see
// SQLiteStorageDir): the issued tokens are forgotten, the uptime starts
// again, and the router, NATS hub, NATS operator and accounts, CAs and signed
// certificates are what dataDir holds (nothing for a new directory, or for "", which keeps the
// database in memory). From then on every change is written to dataDir.
// Requests, failures and configuration are kept.
func (s *Server) Restart(dataDir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for i := range s.pods {
		s.pods[i] = now
	}
	s.tokens = map[string]struct{}{}
	s.dataDir = dataDir
	return s.loadLocked()
}

func newServer(opts []Option) *Server {
	s := &Server{
		closed:         make(chan struct{}),
		pods:           []time.Time{time.Now()},
		username:       DefaultUsername,
		password:       DefaultPassword,
		clientID:       DefaultClientID,
		clientSecret:   DefaultClientSecret,
		tokens:         map[string]struct{}{},
		conflictStatus: http.StatusInternalServerError,
		now:            time.Now,
		lockouts:       map[string]*lockout{},
	}
	for _, opt := range opts {
		opt(s)
	}
	return s
}

// URL returns the base URL (scheme://host:port) to pass to iofog.New.
func (s *Server) URL() string { return s.srv.URL }

// IssuerURL returns the OIDC issuer URL for LoginClientCredentials.
func (s *Server) IssuerURL() string { return s.srv.URL + iofog.EmbeddedIssuerPath }

// CertPool returns a pool holding the TLS server's certificate, or nil for a
// plain HTTP server.
func (s *Server) CertPool() *x509.CertPool {
	cert := s.srv.Certificate()
	if cert == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// CertPEM returns the TLS server's certificate in PEM, or nil for a plain
// HTTP server.
func (s *Server) CertPEM() []byte {
	cert := s.srv.Certificate()
	if cert == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// Close releases hanging requests and shuts the server down. It is safe to
// call more than once.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closed) })
	s.mu.Lock()
	extra := s.extra
	s.extra = nil
	s.mu.Unlock()
	for _, hs := range extra {
		_ = hs.Close()
	}
	s.srv.Close()
}

// ServeHTTP records the request, applies injected failures, then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Timestamp", strconv.FormatInt(time.Now().UnixMilli(), 10))

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	s.record(r, body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "PayloadTooLargeError", "request entity too large")
			return
		}
		writeError(w, http.StatusBadRequest, "ValidationError", "could not read request body")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))

	if f, ok := s.takeFailure(r.Method, r.URL.Path); ok {
		s.fail(w, r, f)
		return
	}
	s.route(w, r, body)
}

// route dispatches to the handlers. Like Express without strict routing, a
// single trailing slash is ignored.
func (s *Server) route(w http.ResponseWriter, r *http.Request, body []byte) {
	path := r.URL.Path
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	const caPrefix, certificatePrefix = "/api/v3/certificates/ca/", "/api/v3/certificates/"
	switch r.Method + " " + path {
	case "GET /api/v3/status":
		s.handleStatus(w)
	case "POST /api/v3/user/login":
		s.handleLogin(w, r, body)
	case "GET /oidc/.well-known/openid-configuration":
		s.handleDiscovery(w)
	case "POST /oidc/token":
		s.handleToken(w, r)
	case "PUT /api/v3/router":
		s.protect(w, r, func() { s.handlePutRouter(w, r, body) })
	case "GET /api/v3/router":
		s.protect(w, r, func() { s.handleGetRouter(w) })
	case "PUT /api/v3/nats/hub":
		s.protect(w, r, func() { s.handlePutHub(w, r, body) })
	case "GET /api/v3/nats/hub":
		s.protect(w, r, func() { s.handleGetHub(w) })
	case "GET /api/v3/nats/bootstrap":
		s.protect(w, r, func() { s.handleBootstrap(w, r) })
	case "GET /api/v3/nats/operator":
		s.protect(w, r, func() { s.handleGetOperator(w, r) })
	case "POST /api/v3/nats/operator/rotate":
		s.protect(w, r, func() { s.handleRotateOperator(w, r) })
	case "GET /api/v3/nats/accounts":
		s.protect(w, r, func() { s.handleListAccounts(w) })
	case "GET /api/v3/certificates":
		s.protect(w, r, func() { s.handleListCertificates(w) })
	case "POST /api/v3/certificates/ca":
		s.protect(w, r, func() { s.handleCreateCA(w, r, body) })
	default:
		if name, ok := caName(r, caPrefix); ok {
			switch r.Method {
			case http.MethodGet:
				s.protect(w, r, func() { s.handleGetCA(w, name) })
				return
			case http.MethodDelete:
				s.protect(w, r, func() { s.handleDeleteCA(w, name) })
				return
			}
		}
		if name, ok := caName(r, certificatePrefix); ok && r.Method == http.MethodDelete {
			s.protect(w, r, func() { s.handleDeleteCertificate(w, name) })
			return
		}
		writeRouteNotFound(w, r)
	}
}

// record appends a copy of r to the request log.
func (s *Server) record(r *http.Request, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{
		Method:   r.Method,
		Path:     r.URL.Path,
		RawQuery: r.URL.RawQuery,
		Header:   r.Header.Clone(),
		Body:     bytes.Clone(body),
	})
}

// Requests returns a copy of every recorded request, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = copyRequest(r)
	}
	return out
}

// RequestsTo returns the recorded requests with the given method and path.
func (s *Server) RequestsTo(method, path string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// Calls returns the recorded requests as "METHOD /path" strings, in order.
func (s *Server) Calls() []string {
	reqs := s.Requests()
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Call()
	}
	return out
}

// Reset forgets the recorded requests. Server state (router, hub, CAs,
// tokens, failures) is kept.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func copyRequest(r Request) Request {
	r.Header = r.Header.Clone()
	r.Body = bytes.Clone(r.Body)
	return r
}

func nameSet(names []string) map[string]struct{} {
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	return set
}

// sortedKeys returns the keys of m in order, for deterministic validation.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
