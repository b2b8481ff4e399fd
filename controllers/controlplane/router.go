package controlplane

import "context"

// routerTLSSecretNames are the router's four TLS Secrets (spec §5.3).
var routerTLSSecretNames = []string{"router-site-ca", "default-router-local-ca", "router-site-server", "router-local-server"}

// reconcileRouter is the Router component (spec §5).
func reconcileRouter(_ context.Context, _ *scope) (result, error) {
	return proceed(), nil
}
