// Package monitoring tests what config/prometheus and config/grafana ship against the metrics
// the operator really exports: every alert of the PrometheusRule is parsed with Prometheus' rule
// parser and evaluated, promtool-style, over samples scraped from a real run of the manager
// (envtest API server, the ioFog Controller double, a Git server on loopback), and every query of
// the Grafana dashboard must name an exported metric.
//
// It is its own Go module so that github.com/prometheus/prometheus (the rule parser and the
// PromQL engine, a large dependency tree) is compiled only here and never constrains the
// operator's own module graph. `make test-monitoring` runs it; `make test` calls that target.
package monitoring
