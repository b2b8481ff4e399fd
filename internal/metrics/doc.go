// Package metrics holds every Prometheus metric the operator exports beside controller-runtime's
// own (controller_runtime_reconcile_*, workqueue_*, rest_client_*), and the small recorder
// functions the reconcilers and clients call at one stable place each.
//
// All metrics are registered on controller-runtime's registry (metrics.Registry), so the
// manager's metrics endpoint serves them; docs/operability.md lists them with their alerts.
//
// # Naming and cardinality
//
// Names start with kubeopera_, durations end in _seconds, counters in _total, timestamps in
// _timestamp_seconds. No label holds a per-app value (app name, commit, repository URL). The only
// per-object labels are controlplane_namespace and controlplane, on gauges that describe one
// ControlPlane: their number is bounded by the ControlPlanes in the cluster (typically one per
// namespace), every such series is deleted when its ControlPlane goes (ForgetControlPlane), and
// the label names avoid "namespace" so that a ServiceMonitor's target label of the same name does
// not clash with them. Reasons are the UpperCamel condition reason constants of the API
// packages, a fixed set. Everything per app is aggregated in process: the number of apps that
// are not Synced (by reason) and a histogram of the Flux sync lag.
//
// # Choices where the issue is silent
//
//   - Certificate expiry is exported as the notAfter timestamp
//     (kubeopera_certificate_expiration_timestamp_seconds), the cert-manager idiom: a stored
//     "seconds until" would go stale between reconciles. Seconds until expiry is
//     `kubeopera_certificate_expiration_timestamp_seconds - time()` in PromQL.
//   - Controller API requests are labelled by endpoint template (/certificates/ca/{name}), never
//     the concrete path, and by status class (2xx, 4xx, 5xx) or "error" when no answer came.
//     Token requests to an OIDC identity provider are counted under endpoint "identity_provider".
//   - Git conflicts and authentication failures are outcomes of kubeopera_git_pushes_total
//     (outcome="conflict", "auth_failed"), so one counter shows every push and its result.
//   - Flux sync lag is measured from the first pass that saw an app's new commit in its status to
//     the first pass that saw that commit applied and the app Synced; a restart of the operator
//     forgets commits in flight (the lag of those is not observed rather than guessed).
package metrics
