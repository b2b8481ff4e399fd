package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// apiProxy is one vCluster's API endpoint in P5 (and the host's, for the operator): a TLS
// reverse proxy on its own loopback port in front of a shared envtest kube-apiserver. Each has a
// server URL, a certificate (from benchCA) and a bearer token of its own, so the operator sees a
// distinct cluster per tenant, and it counts what its one client (the operator) does: requests
// by kind, open connections, and the connections that carry a watch (apiStats). It forwards every
// request unchanged except for the credentials (the upstream connection authenticates as the
// user of the upstream config, so the audit log attributes writes as before) and, with scope, the
// label selector of the operator's label-selected lists and watches (scopedQuery), so each
// tenant lists and watches only its own apps' objects, as in a vCluster of its own.
type apiProxy struct {
	name  string
	url   string
	token string
	srv   *http.Server
	stats *apiStats
}

// benchCA signs the proxies' serving certificate (127.0.0.1), which the kubeconfigs trust.
type benchCA struct {
	pem  []byte
	cert tls.Certificate
}

func newBenchCA() (*benchCA, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench vCluster proxies CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	return &benchCA{
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}, nil
}

// startAPIProxy serves name on a free loopback port, forwarding to upstream's API server with
// upstream's credentials. scope, when not empty, are the app names this tenant sees.
func startAPIProxy(name string, upstream *rest.Config, ca *benchCA, scope []string) (*apiProxy, error) {
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, err
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	p := &apiProxy{name: name, token: name + "-" + strings.ToLower(big.NewInt(0).SetBytes(token).Text(36)), stats: newAPIStats()}
	rp := &httputil.ReverseProxy{
		Transport:     rt,
		FlushInterval: -1, // watch events go through at once
		ErrorLog:      log.New(io.Discard, "", 0),
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			r.Out.Header.Del("Authorization")
			if q, ok := scopedQuery(r.In.URL.Query(), scope); ok {
				r.Out.URL.RawQuery = q.Encode()
			}
		},
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.url = "https://" + l.Addr().String()
	p.srv = &http.Server{
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{ca.cert}, MinVersion: tls.VersionTLS12},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, proxyConnKey{}, c)
		},
		ConnState: func(c net.Conn, s http.ConnState) {
			// Only the start and the end of a connection count.
			switch s {
			case http.StateNew:
				p.stats.connOpened(c)
			case http.StateClosed, http.StateHijacked:
				p.stats.connClosed(c)
			default:
			}
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+p.token {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			c, _ := r.Context().Value(proxyConnKey{}).(net.Conn)
			done := p.stats.request(c, classify(r.Method, r.URL), resourceOf(r.URL.Path))
			defer done()
			rp.ServeHTTP(w, r)
		}),
	}
	go func() { _ = p.srv.ServeTLS(l, "", "") }()
	return p, nil
}

type proxyConnKey struct{}

// kubeconfig is the proxy's kubeconfig, as a vcluster exports one: inline CA and token.
func (p *apiProxy) kubeconfig(ca *benchCA) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[p.name] = &clientcmdapi.Cluster{Server: p.url, CertificateAuthorityData: ca.pem}
	cfg.AuthInfos[p.name] = &clientcmdapi.AuthInfo{Token: p.token}
	cfg.Contexts[p.name] = &clientcmdapi.Context{Cluster: p.name, AuthInfo: p.name}
	cfg.CurrentContext = p.name
	return clientcmd.Write(*cfg)
}

func (p *apiProxy) close() { _ = p.srv.Close() }

// scopedQuery narrows a list or watch that selects the operator's objects by its managed-by
// label (the vCluster watches of controllers/app watchedkinds.go) to the objects of the apps
// named in scope, by their app.kubernetes.io/name label: what one tenant's own vCluster would
// hold when several tenants share one API server. ok is false when the query is left as it is.
func scopedQuery(q url.Values, scope []string) (url.Values, bool) {
	sel := q.Get("labelSelector")
	if len(scope) == 0 || !strings.Contains(sel, render.LabelManagedBy) {
		return q, false
	}
	names := slices.Clone(scope)
	slices.Sort(names)
	out := url.Values{}
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	out.Set("labelSelector", sel+","+render.LabelName+" in ("+strings.Join(names, ",")+")")
	return out, true
}

// requestKind classifies an API request.
type requestKind string

const (
	kindRead  requestKind = "read"  // get and list
	kindWatch requestKind = "watch" // a watch stream
	kindWrite requestKind = "write" // create, update, patch, delete
)

func classify(method string, u *url.URL) requestKind {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if w := u.Query().Get("watch"); w == "true" || w == "1" || strings.Contains(u.Path, "/watch/") {
			return kindWatch
		}
		return kindRead
	default:
		return kindWrite
	}
}

// apiStats counts the requests and connections of a proxy's clients. Connections are the
// proxy's server side of the client's TCP connections (HTTP/2 carries every request of one
// client transport over one); a watch connection is one that carries at least one running
// watch.
type apiStats struct {
	mu       sync.Mutex
	requests map[requestKind]int
	// byResource counts the requests per kind and resource (resourceOf).
	byResource map[kindResource]int
	// watches is the number of running watches per open connection.
	watches        map[net.Conn]int
	open, peakOpen int
	// watchConns is the number of connections with a running watch now; peakWatchConns its
	// highest value.
	watchConns, peakWatchConns int
}

func newAPIStats() *apiStats {
	return &apiStats{requests: map[requestKind]int{}, byResource: map[kindResource]int{}, watches: map[net.Conn]int{}}
}

// kindResource is a request kind and the resource it was for.
type kindResource struct {
	kind     requestKind
	resource string
}

// resourceOf is the resource an API path names, with its subresource ("secrets",
// "kubeoperaapps/status"), or "discovery" for the discovery documents.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "discovery"
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	switch len(parts) {
	case 0:
		return "discovery"
	case 1, 2:
		return parts[0]
	default:
		return parts[0] + "/" + parts[2]
	}
}

func (s *apiStats) connOpened(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.watches[c]; ok {
		return
	}
	s.watches[c] = 0
	s.open++
	s.peakOpen = max(s.peakOpen, s.open)
}

func (s *apiStats) connClosed(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.watches[c]
	if !ok {
		return
	}
	if n > 0 {
		s.watchConns--
	}
	delete(s.watches, c)
	s.open--
}

// request counts one request of kind on c and returns the function that ends it.
func (s *apiStats) request(c net.Conn, kind requestKind, resource string) (done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[kind]++
	s.byResource[kindResource{kind, resource}]++
	if kind != kindWatch || c == nil {
		return func() {}
	}
	if _, ok := s.watches[c]; !ok {
		return func() {} // the connection is already closed
	}
	s.watches[c]++
	if s.watches[c] == 1 {
		s.watchConns++
		s.peakWatchConns = max(s.peakWatchConns, s.watchConns)
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		n, ok := s.watches[c]
		if !ok || n == 0 {
			return
		}
		s.watches[c] = n - 1
		if n == 1 {
			s.watchConns--
		}
	}
}

// apiCounts is a reading of apiStats.
type apiCounts struct {
	requests                   map[requestKind]int
	byResource                 map[kindResource]int
	open, peakOpen             int
	watchConns, peakWatchConns int
}

func (c apiCounts) total() int {
	n := 0
	for _, v := range c.requests {
		n += v
	}
	return n
}

func (s *apiStats) snapshot() apiCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return apiCounts{requests: maps.Clone(s.requests), byResource: maps.Clone(s.byResource), open: s.open, peakOpen: s.peakOpen, watchConns: s.watchConns, peakWatchConns: s.peakWatchConns}
}
