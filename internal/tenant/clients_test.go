package tenant

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// liveConns counts the server's open connections (net/http's ConnState hook, on the server
// side of each connection).
type liveConns struct {
	mu     sync.Mutex
	open   map[net.Conn]bool
	opened int
}

func (l *liveConns) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch st {
	case http.StateNew:
		l.open[c] = true
		l.opened++
	case http.StateClosed, http.StateHijacked:
		delete(l.open, c)
	}
}

func (l *liveConns) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opened
}

func (l *liveConns) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.open)
}

// A dropped client (Forget, or replaced by a new Secret version) has its idle connections
// closed at once, not after the transport's idle timeout.
func TestDroppedClientClosesItsConnections(t *testing.T) {
	g := NewWithT(t)
	conns := &liveConns{open: map[net.Conn]bool{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("{}"))
	}))
	srv.Config.ConnState = conns.track
	srv.StartTLS()
	t.Cleanup(srv.Close)

	// Every client the cache builds sends one request, as a first reconcile would.
	clients := NewClients(func(cfg *rest.Config, hc *http.Client) (client.Client, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, cfg.Host+"/version", nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		// Read to the end, so the connection goes back to the transport's idle pool.
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return fake.NewClientBuilder().Build(), nil
	})
	load := func() (*rest.Config, error) {
		return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM(t, srv)}}, nil
	}
	a, b := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	_, err := clients.Get(a, SecretVersion{UID: "a", ResourceVersion: "1"}, load)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = clients.Get(b, SecretVersion{UID: "b", ResourceVersion: "1"}, load)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conns.count()).To(Equal(2), "each client has its own transport and keeps its connection")

	// A rotated kubeconfig: the old client's connection goes, the new one's stays.
	_, err = clients.Get(a, SecretVersion{UID: "a", ResourceVersion: "2"}, load)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conns.total()).To(Equal(3))
	g.Eventually(conns.count, 5*time.Second, 10*time.Millisecond).Should(Equal(2))

	clients.Forget(a)
	g.Eventually(conns.count, 5*time.Second, 10*time.Millisecond).Should(Equal(1))
	clients.Forget(b)
	g.Eventually(conns.count, 5*time.Second, 10*time.Millisecond).Should(Equal(0))
	g.Expect(clients.Len()).To(Equal(0))
}

func caPEM(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
