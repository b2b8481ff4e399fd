// Package e2e is the end-to-end test of the App Controller with the real Flux controllers: the
// reconciler runs against a host API server, the Flux source-controller and kustomize-controller
// (v1.9.6 binaries built by `make flux-controllers`) run as child processes against a second API
// server standing in for the tenant vCluster, and a Git server on loopback holds the tenant apps
// repository. Everything runs in `make test` (go test ./...).
package e2e

import "github.com/kubeopera/kubeopera-operator/internal/apptest"

// Flux is the two Flux controllers running as child processes (the runner lives in
// internal/apptest, shared with the local sandbox of `make run`).
type Flux = apptest.Flux

// StartFlux runs source-controller and kustomize-controller; see apptest.StartFlux.
var StartFlux = apptest.StartFlux
