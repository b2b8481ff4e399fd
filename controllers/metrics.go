package controllers

import (
	"crypto/tls"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint (docs/operability.md). Served over HTTPS by default: every scrape is
// authenticated with a TokenReview and authorized with a SubjectAccessReview for GET /metrics
// (ClusterRole metrics-reader), which is what the RBAC below allows the manager to ask for
// (metricsauth.go).
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Default metrics addresses: DefaultSecureMetricsAddress when MetricsSecure, otherwise
// DefaultInsecureMetricsAddress (both used when MetricsBindAddress is empty).
const (
	DefaultSecureMetricsAddress   = ":8443"
	DefaultInsecureMetricsAddress = ":8080"
)

// metricsServerOptions turns the manager options into controller-runtime's metrics server
// options. Secure serving uses the certificate tls.crt/tls.key in MetricsCertDir, or a
// self-signed one controller-runtime generates when MetricsCertDir is empty. HTTP/2 is off (the
// kubebuilder default since CVE-2023-44487: the endpoint needs nothing from it).
func metricsServerOptions(opts Options) metricsserver.Options {
	addr := opts.MetricsBindAddress
	if addr == "" {
		addr = DefaultInsecureMetricsAddress
		if opts.MetricsSecure {
			addr = DefaultSecureMetricsAddress
		}
	}
	o := metricsserver.Options{BindAddress: addr}
	if !opts.MetricsSecure {
		return o
	}
	o.SecureServing = true
	o.FilterProvider = metricsAuthFilter
	o.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.NextProtos = []string{"http/1.1"}
		c.MinVersion = tls.VersionTLS12
	}}
	if opts.MetricsCertDir != "" {
		o.CertDir, o.CertName, o.KeyName = opts.MetricsCertDir, "tls.crt", "tls.key"
	}
	return o
}
