// Package pki generates, parses and checks the X.509 material behind the
// router and NATS TLS Secrets (docs/controlplane.md#certificate-parameters,
// docs/controlplane.md#tls).
//
// Everything here is a pure function of its arguments: the clock is passed in
// as now, and the sources of randomness (RSA key generation and the serial
// number) can be replaced through Options. Nothing here logs, panics or talks
// to Kubernetes; the reconcilers decide what to do with the errors, which can
// be classified with errors.Is against the Err* sentinels.
//
// Renewal is a decision, not an action: CheckLeaf says whether a leaf the
// operator issued must be issued again (its CA changed, its hosts changed, or
// two thirds of its lifetime passed, RenewalTime) and when it falls due. CAs
// have no renewal decision: the operator's CAs are long-lived by design (see
// docs/controlplane.md, "Why the CAs are not renewed").
package pki
