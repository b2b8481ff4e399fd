package tenant

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

// SecretVersion identifies one version of a kubeconfig Secret: a recreated Secret has a new
// UID, an updated one a new resourceVersion.
type SecretVersion struct {
	UID             types.UID
	ResourceVersion string
	// Key is the data key the kubeconfig is read from; a different key is another version.
	Key string
}

// NewClientFunc builds a client for a vCluster from its REST config and the HTTP client built
// for it (rest.HTTPClientFor). The client must send every request through httpClient (e.g.
// client.Options.HTTPClient), so that the cache can close its connections when it drops the
// client; it may wrap httpClient.Transport.
type NewClientFunc func(cfg *rest.Config, httpClient *http.Client) (client.Client, error)

// NewClient returns the NewClientFunc of the operator's vCluster clients: controller-runtime
// clients of scheme that map kinds with NewRESTMapper (the watches of a vCluster map with its
// client's mapper too).
func NewClient(scheme *runtime.Scheme) NewClientFunc {
	return func(cfg *rest.Config, httpClient *http.Client) (client.Client, error) {
		mapper, err := NewRESTMapper(cfg, httpClient)
		if err != nil {
			return nil, err
		}
		return client.New(cfg, client.Options{Scheme: scheme, HTTPClient: httpClient, Mapper: mapper})
	}
}

// Clients caches one vCluster client per Tenant, keyed by the version of its kubeconfig Secret,
// so a reconcile does not rebuild REST clients and discovery each time, and a rotated or
// replaced kubeconfig is picked up at once. Safe for concurrent use.
//
// Each client has an HTTP transport of its own (never shared through client-go's TLS cache, see
// Get), with client-go's dial timeout and keep-alive. A dropped client (Forget, or replaced by a new
// Secret version) has its transport's idle connections closed at once: a vCluster that is gone
// or unused keeps no connection of the operator open, instead of waiting for the transport's
// idle timeout. A request still in flight on a dropped client finishes normally; its connection
// is closed by the transport's idle timeout (client-go's: 90s).
type Clients struct {
	newClient NewClientFunc

	mu      sync.Mutex
	entries map[types.NamespacedName]*clientEntry
	builds  int
	// builds of one Tenant's client for one Secret version run once at a time; concurrent misses
	// share the result.
	building singleflight.Group
}

type clientEntry struct {
	version SecretVersion
	client  client.Client
	// transport is the client's own transport, as built (before newClient may wrap it).
	transport http.RoundTripper
}

// close drops the entry's idle connections.
func (e *clientEntry) close() {
	utilnet.CloseIdleConnectionsFor(e.transport)
}

// NewClients returns an empty cache that builds clients with newClient.
func NewClients(newClient NewClientFunc) *Clients {
	return &Clients{newClient: newClient, entries: map[types.NamespacedName]*clientEntry{}}
}

// Get returns the client of tenant for the given Secret version. On a miss (first use, or the
// Secret changed) it calls load for the REST config, builds a client and replaces the entry.
// Concurrent misses for one Tenant and Secret version share one build (and its error): the apps
// of a vCluster created together read the kubeconfig and the discovery documents once, not once
// per app.
func (c *Clients) Get(tenant types.NamespacedName, version SecretVersion, load func() (*rest.Config, error)) (client.Client, error) {
	if cl, ok := c.cached(tenant, version); ok {
		return cl, nil
	}
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%s", tenant, version.UID, version.ResourceVersion, version.Key)
	cl, err, _ := c.building.Do(key, func() (any, error) {
		if cl, ok := c.cached(tenant, version); ok {
			return cl, nil
		}
		return c.build(tenant, version, load)
	})
	if err != nil {
		return nil, err
	}
	// A NewClientFunc may build a nil client (tests that never reach the vCluster).
	built, _ := cl.(client.Client)
	return built, nil
}

// build loads the Tenant's REST config, builds its client and makes it the Tenant's entry.
func (c *Clients) build(tenant types.NamespacedName, version SecretVersion, load func() (*rest.Config, error)) (client.Client, error) {
	cfg, err := load()
	if err != nil {
		return nil, err
	}
	// A dialer of its own gives the client a transport of its own: client-go shares one
	// transport between configs with equal TLS settings (its TLS cache), and closing the idle
	// connections of a shared transport would close those of other clients.
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: build HTTP client: %w", ErrKubeconfigInvalid, err)
	}
	transport := hc.Transport
	cl, err := c.newClient(cfg, hc)
	if err != nil {
		utilnet.CloseIdleConnectionsFor(transport)
		return nil, fmt.Errorf("%w: build client: %w", ErrKubeconfigInvalid, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[tenant]; ok {
		old.close()
	}
	c.entries[tenant] = &clientEntry{version: version, client: cl, transport: transport}
	metrics.SetTenantClients(len(c.entries))
	c.builds++
	return cl, nil
}

// cached returns the Tenant's client when it was built for version.
func (c *Clients) cached(tenant types.NamespacedName, version SecretVersion) (client.Client, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[tenant]; ok && e.version == version {
		return e.client, true
	}
	return nil, false
}

// Forget drops the Tenant's client (the Tenant or its Secret is gone, or no app uses it) and
// closes its idle connections.
func (c *Clients) Forget(tenant types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[tenant]; ok {
		e.close()
		delete(c.entries, tenant)
	}
	metrics.SetTenantClients(len(c.entries))
}

// Tenants lists the Tenants of namespace that have a cached client.
func (c *Clients) Tenants(namespace string) []types.NamespacedName {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []types.NamespacedName
	for t := range c.entries {
		if t.Namespace == namespace {
			out = append(out, t)
		}
	}
	return out
}

// Len is the number of Tenants with a cached client.
func (c *Clients) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Builds is the number of clients built so far; tests use it to prove the cache works.
func (c *Clients) Builds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.builds
}
