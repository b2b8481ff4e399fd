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

// The apps of a vCluster created together miss the cache at once: one of them builds the client
// (one kubeconfig read, one set of discovery requests), the others wait for it and take it.
// Fails when each miss loads and builds its own.
func TestConcurrentMissesBuildOneClient(t *testing.T) {
	g := NewWithT(t)
	built := fake.NewClientBuilder().Build()
	c := NewClients(func(*rest.Config, *http.Client) (client.Client, error) { return built, nil })
	tenant := types.NamespacedName{Namespace: "ns", Name: "t1"}
	version := SecretVersion{UID: "u1", ResourceVersion: "1", Key: "config"}
	release := make(chan struct{})
	var mu sync.Mutex
	loads := 0
	load := func() (*rest.Config, error) {
		mu.Lock()
		loads++
		mu.Unlock()
		<-release
		return &rest.Config{Host: "https://vc.example:443"}, nil
	}
	loaded := func() int {
		mu.Lock()
		defer mu.Unlock()
		return loads
	}
	var wg sync.WaitGroup
	got := make([]client.Client, 10)
	errs := make([]error, 10)
	for i := range got {
		wg.Go(func() { got[i], errs[i] = c.Get(tenant, version, load) })
	}
	g.Eventually(loaded).Should(Equal(1))
	// While the first build waits for its kubeconfig, no other miss loads one.
	g.Consistently(loaded, 200*time.Millisecond, 10*time.Millisecond).Should(Equal(1))
	close(release)
	wg.Wait()
	for i := range got {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(got[i]).To(BeIdenticalTo(built))
	}
	g.Expect(c.Builds()).To(Equal(1))
	g.Expect(loaded()).To(Equal(1))

	// A new Secret version is a miss again, built once.
	_, err := c.Get(tenant, SecretVersion{UID: "u1", ResourceVersion: "2", Key: "config"}, func() (*rest.Config, error) {
		return &rest.Config{Host: "https://vc.example:443"}, nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Builds()).To(Equal(2))
}
