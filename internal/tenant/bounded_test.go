package tenant

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// A server that answers with more than the bound fails the request with ErrResponseTooLarge
// once the bound is passed, whether or not it announces its length; an answer within the bound
// and a watch stream are read whole.
func TestAnswersAreBounded(t *testing.T) {
	g := NewWithT(t)
	const limit = 1024
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size, _ := strconv.Atoi(r.URL.Query().Get("size"))
		if r.URL.Query().Get("announce") == "" {
			w.(http.Flusher).Flush() // chunked: no Content-Length
		}
		_, _ = io.WriteString(w, strings.Repeat("x", size))
	}))
	defer srv.Close()
	hc := &http.Client{Transport: boundResponses(limit)(http.DefaultTransport)}
	get := func(query string) (int, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/api/v1/namespaces?"+query, nil)
		if err != nil {
			return 0, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		return len(b), err
	}
	for _, tc := range []struct {
		query   string
		read    int
		tooBig  bool
		because string
	}{
		{"size=1024", 1024, false, "at the bound"},
		{"size=1025", 1024, true, "one byte over, streamed"},
		{"size=100000", 1024, true, "far over, streamed"},
		{"size=1025&announce=1", 0, true, "announced over"},
		{"size=100000&watch=true", 100000, false, "a watch stream is not bounded as a whole"},
	} {
		n, err := get(tc.query)
		if tc.tooBig {
			g.Expect(err).To(MatchError(ErrResponseTooLarge), tc.because)
		} else {
			g.Expect(err).NotTo(HaveOccurred(), tc.because)
		}
		g.Expect(n).To(BeNumerically("<=", tc.read), tc.because)
	}
}

// Every transport built from a Tenant's REST config has the bound.
func TestRESTConfigBoundsAnswers(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.(http.Flusher).Flush()
		chunk := strings.Repeat("x", 1<<20)
		for range MaxResponseBytes>>20 + 1 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: vc
clusters:
- name: vc
  cluster: {server: %q, certificate-authority-data: %s}
contexts:
- name: vc
  context: {cluster: vc, user: vc}
users:
- name: vc
  user: {token: t0ken}
`, srv.URL, base64.StdEncoding.EncodeToString(ca))
	tn := newTenant("t1", "cs-1", 1)
	cfg, err := RESTConfig([]byte(kc), &tn, ConfigOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/apis/cert-manager.io/v1/certificates", nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	n, err := io.Copy(io.Discard, resp.Body)
	g.Expect(err).To(MatchError(ErrResponseTooLarge))
	g.Expect(n).To(Equal(int64(MaxResponseBytes)))
}

// closeRecorder is a base transport that records CloseIdleConnections.
type closeRecorder struct {
	http.RoundTripper
	closed int
}

func (c *closeRecorder) CloseIdleConnections() { c.closed++ }

// wrapperOnly is a client-go style wrapper: it names what it wraps, and closes nothing itself.
type wrapperOnly struct{ next http.RoundTripper }

func (w wrapperOnly) RoundTrip(r *http.Request) (*http.Response, error) { return w.next.RoundTrip(r) }
func (w wrapperOnly) WrappedRoundTripper() http.RoundTripper            { return w.next }

// Closing a dropped client's idle connections reaches the base transport through the bound,
// wherever client-go puts the bound in its chain of wrappers.
func TestBoundedTransportClosesIdleConnectionsThroughWrappers(t *testing.T) {
	g := NewWithT(t)
	base := &closeRecorder{RoundTripper: http.DefaultTransport}
	utilnet.CloseIdleConnectionsFor(boundResponses(1)(wrapperOnly{base}))
	g.Expect(base.closed).To(Equal(1), "bound outside a wrapper")
	utilnet.CloseIdleConnectionsFor(wrapperOnly{boundResponses(1)(base)})
	g.Expect(base.closed).To(Equal(2), "bound inside a wrapper")
}
