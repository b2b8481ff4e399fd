// Package pki generates and parses the X.509 material behind the router and
// NATS TLS Secrets (docs/controlplane.md#certificate-parameters, docs/controlplane.md#nats-tls-secrets).
//
// Everything here is a pure function of its arguments: the clock is passed in
// as now, and the sources of randomness (RSA key generation and the serial
// number) can be replaced through Options. Nothing here logs, panics or talks
// to Kubernetes; the reconcilers decide what to do with the errors, which can
// be classified with errors.Is against the Err* sentinels.
package pki
