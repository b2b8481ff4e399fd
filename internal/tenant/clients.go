package tenant

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
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

// NewClientFunc builds a client for a vCluster.
type NewClientFunc func(cfg *rest.Config) (client.Client, error)

// Clients caches one vCluster client per Tenant, keyed by the version of its kubeconfig Secret,
// so a reconcile does not rebuild REST clients and discovery each time, and a rotated or
// replaced kubeconfig is picked up at once. Safe for concurrent use.
type Clients struct {
	newClient NewClientFunc

	mu      sync.Mutex
	entries map[types.NamespacedName]*clientEntry
	builds  int
}

type clientEntry struct {
	version SecretVersion
	client  client.Client
}

// NewClients returns an empty cache that builds clients with newClient.
func NewClients(newClient NewClientFunc) *Clients {
	return &Clients{newClient: newClient, entries: map[types.NamespacedName]*clientEntry{}}
}

// Get returns the client of tenant for the given Secret version. On a miss (first use, or the
// Secret changed) it calls load for the REST config, builds a client and replaces the entry.
// Concurrent misses for one Tenant may build twice; the last one wins, both are usable.
func (c *Clients) Get(tenant types.NamespacedName, version SecretVersion, load func() (*rest.Config, error)) (client.Client, error) {
	c.mu.Lock()
	if e, ok := c.entries[tenant]; ok && e.version == version {
		c.mu.Unlock()
		return e.client, nil
	}
	c.mu.Unlock()

	cfg, err := load()
	if err != nil {
		return nil, err
	}
	cl, err := c.newClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: build client: %w", ErrKubeconfigInvalid, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[tenant] = &clientEntry{version: version, client: cl}
	metrics.SetTenantClients(len(c.entries))
	c.builds++
	return cl, nil
}

// Forget drops the Tenant's client (the Tenant or its Secret is gone).
func (c *Clients) Forget(tenant types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, tenant)
	metrics.SetTenantClients(len(c.entries))
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
