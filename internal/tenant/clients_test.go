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
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	clients := NewClients(func(cfg *rest.Config, hc *http.Client, _ apimeta.RESTMapper) (client.Client, error) {
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

// The client of a vCluster and whoever else maps its kinds (the App Controller's watches) share
// one REST mapper: the vCluster's discovery is read once per group, not once per user, and a
// rotated kubeconfig gets a new mapper with its new client.
func TestClientAndWatchesShareTheVClustersRESTMapper(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	discovery := map[string]int{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		discovery[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api":
			_, _ = w.Write([]byte(`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`))
		case "/apis":
			_, _ = w.Write([]byte(`{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`))
		case "/api/v1":
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"v1","resources":[` +
				`{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","watch"]}]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	reads := func() int {
		mu.Lock()
		defer mu.Unlock()
		return discovery["/api/v1"]
	}

	built := map[SecretVersion]apimeta.RESTMapper{}
	var version SecretVersion
	clients := NewClients(func(cfg *rest.Config, hc *http.Client, mapper apimeta.RESTMapper) (client.Client, error) {
		built[version] = mapper
		return client.New(cfg, client.Options{HTTPClient: hc, Mapper: mapper})
	})
	load := func() (*rest.Config, error) {
		return &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM(t, srv)}}, nil
	}
	tenantKey := types.NamespacedName{Namespace: "ns", Name: "a"}
	configMap := schema.GroupKind{Kind: "ConfigMap"}

	version = SecretVersion{UID: "a", ResourceVersion: "1"}
	cl, err := clients.Get(tenantKey, version, load)
	g.Expect(err).NotTo(HaveOccurred())
	shared, ok := clients.RESTMapper(tenantKey, version)
	g.Expect(ok).To(BeTrue())
	g.Expect(shared).To(BeIdenticalTo(built[version]), "the mapper handed out is the client's")
	_, err = cl.RESTMapper().RESTMapping(configMap, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = shared.RESTMapping(configMap, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reads()).To(Equal(1), "the client and the watches mapped ConfigMaps with one discovery read")

	// A rotated kubeconfig: a new client and a new mapper; the old version's is no longer handed out.
	old := version
	version = SecretVersion{UID: "a", ResourceVersion: "2"}
	_, err = clients.Get(tenantKey, version, load)
	g.Expect(err).NotTo(HaveOccurred())
	_, ok = clients.RESTMapper(tenantKey, old)
	g.Expect(ok).To(BeFalse())
	rotated, ok := clients.RESTMapper(tenantKey, version)
	g.Expect(ok).To(BeTrue())
	g.Expect(rotated).NotTo(BeIdenticalTo(shared))
	_, err = rotated.RESTMapping(configMap, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reads()).To(Equal(2), "the new mapper reads the discovery of its own")

	clients.Forget(tenantKey)
	_, ok = clients.RESTMapper(tenantKey, version)
	g.Expect(ok).To(BeFalse())
}
