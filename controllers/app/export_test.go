package app

import (
	"errors"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// WatchesMapWithTheClientsMapper reports whether the running watches of Tenant namespace/name
// map kinds with the REST mapper of the Tenant's cached vCluster client (one mapper per vCluster,
// tenantwatch.go run); false when the Tenant is not watched or has no cached client.
func (r *Reconciler) WatchesMapWithTheClientsMapper(namespace, name string) bool {
	t := types.NamespacedName{Namespace: namespace, Name: name}
	r.vclusterWatches.mu.Lock()
	tw, ok := r.vclusterWatches.watches[t]
	r.vclusterWatches.mu.Unlock()
	if !ok {
		return false
	}
	vc, err := r.clients.Get(t, tw.version, func() (*rest.Config, error) { return nil, errors.New("no cached client") })
	return err == nil && tw.mapper == vc.RESTMapper()
}
