package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric names, exported so that tests, alerts and the dashboard can be checked against them.
//
//nolint:gosec // G101: metric and label names ("passes"), not credentials.
const (
	ComponentPassesTotal         = "kubeopera_controlplane_component_passes_total"
	ComponentReason              = "kubeopera_controlplane_component_reason"
	ControlPlaneRegistered       = "kubeopera_controlplane_registered"
	CertificateExpirationTime    = "kubeopera_certificate_expiration_timestamp_seconds"
	ControllerAPIRequestsTotal   = "kubeopera_controller_api_requests_total"
	ControllerAPIRequestDuration = "kubeopera_controller_api_request_duration_seconds"
	AppPlacementsTotal           = "kubeopera_app_placements_total"
	AppsNotSynced                = "kubeopera_apps_not_synced"
	AppSyncLag                   = "kubeopera_app_sync_lag_seconds"
	GitPushesTotal               = "kubeopera_git_pushes_total"
	GitPushDuration              = "kubeopera_git_push_duration_seconds"
	GitPushBatchSize             = "kubeopera_git_push_batch_size"
	GitPushRetriesTotal          = "kubeopera_git_push_retries_total"
	GitClones                    = "kubeopera_git_clones"
	TenantClients                = "kubeopera_tenant_clients"
	AppVClusterEventsTotal       = "kubeopera_app_vcluster_events_total"
	AppFolderChecksTotal         = "kubeopera_app_folder_checks_total"
	controlPlaneNamespaceLabel   = "controlplane_namespace"
	controlPlaneNameLabel        = "controlplane"
	componentLabel               = "component"
	reasonLabel                  = "reason"
	outcomeLabel                 = "outcome"
	answerLabel                  = "answer"
	secretLabel                  = "secret"
	methodLabel                  = "method"
	endpointLabel                = "endpoint"
	codeLabel                    = "code"
)

// Names lists every metric this package exports (histograms by their base name).
func Names() []string {
	return []string{
		ComponentPassesTotal, ComponentReason, ControlPlaneRegistered, CertificateExpirationTime,
		ControllerAPIRequestsTotal, ControllerAPIRequestDuration,
		AppPlacementsTotal, AppsNotSynced, AppSyncLag,
		GitPushesTotal, GitPushDuration, GitPushBatchSize, GitPushRetriesTotal,
		GitClones, TenantClients, AppVClusterEventsTotal, AppFolderChecksTotal,
	}
}

// set is one instance of every metric with the state the recorders keep. The package uses one
// (std), registered on controller-runtime's registry; tests build their own.
type set struct {
	componentPasses *prometheus.CounterVec
	componentReason *prometheus.GaugeVec
	registered      *prometheus.GaugeVec
	certExpiry      *prometheus.GaugeVec

	apiRequests *prometheus.CounterVec
	apiDuration *prometheus.HistogramVec

	appPlacements *prometheus.CounterVec
	appSyncLag    prometheus.Histogram
	apps          *appTracker

	gitPushes   *prometheus.CounterVec
	gitDuration prometheus.Histogram
	gitBatch    prometheus.Histogram
	gitRetries  prometheus.Counter
	gitClones   prometheus.Gauge
	tenantCache prometheus.Gauge
	appEvents   *prometheus.CounterVec
	folderCheck *prometheus.CounterVec

	// mu guards reasons: the current reason series of each ControlPlane component, so that a
	// changed reason leaves no stale series behind.
	mu      sync.Mutex
	reasons map[componentKey]string
}

type controlPlaneKey struct{ namespace, name string }

type componentKey struct {
	controlPlaneKey
	component string
}

func newSet(now func() time.Time) *set {
	cp := []string{controlPlaneNamespaceLabel, controlPlaneNameLabel}
	s := &set{
		componentPasses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ComponentPassesTotal,
			Help: "ControlPlane component passes (router, nats, controller) by outcome: continue, requeue or error.",
		}, []string{componentLabel, outcomeLabel}),
		componentReason: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: ComponentReason,
			Help: "1 for the reason a ControlPlane component's last pass ended with (Reconciled when it finished).",
		}, append(append([]string{}, cp...), componentLabel, reasonLabel)),
		registered: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: ControlPlaneRegistered,
			Help: "1 when the last pass found the ControlPlane's router, NATS hub and CAs registered with its Controller, else 0.",
		}, cp),
		certExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: CertificateExpirationTime,
			Help: "notAfter (Unix seconds) of each certificate in the TLS Secrets the operator issued or imported.",
		}, append(append([]string{}, cp...), secretLabel)),
		apiRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: ControllerAPIRequestsTotal,
			Help: "Controller REST API requests by method, endpoint template and status class (error: no answer).",
		}, []string{methodLabel, endpointLabel, codeLabel}),
		apiDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    ControllerAPIRequestDuration,
			Help:    "Duration of Controller REST API requests by method and endpoint template.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		}, []string{methodLabel, endpointLabel}),
		appPlacements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: AppPlacementsTotal,
			Help: "KubeOperaApp passes by the reason of the Ready condition they ended with.",
		}, []string{reasonLabel}),
		appSyncLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    AppSyncLag,
			Help:    "Time from a pushed commit first seen in an app's status to Flux having applied it (app Synced).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
		}),
		apps: newAppTracker(now),
		gitPushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: GitPushesTotal,
			Help: "Git batch writes by outcome: success, unchanged (nothing to push), conflict, auth_failed, error.",
		}, []string{outcomeLabel}),
		gitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    GitPushDuration,
			Help:    "Duration of one Git batch write: fetch, commit and push, retries included.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
		gitBatch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    GitPushBatchSize,
			Help:    "App changes written by one Git batch (one commit and push).",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100},
		}),
		gitRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: GitPushRetriesTotal,
			Help: "Git pushes redone because the remote branch moved (non-fast-forward).",
		}),
		gitClones: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: GitClones,
			Help: "Working clones (repository and branch) the Git writer keeps.",
		}),
		tenantCache: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: TenantClients,
			Help: "vCluster clients in the tenant client cache.",
		}),
		appEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: AppVClusterEventsTotal,
			Help: "vCluster events that concern an app, by what the per-Tenant pacing did: enqueued, deferred, coalesced, released.",
		}, []string{outcomeLabel}),
		folderCheck: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: AppFolderChecksTotal,
			Help: "Kustomization events of Synced apps that reported a revision, by whether the app's folder is the same there: unchanged (no pass), changed (a pass), unanswered (a pass: the comparison failed).",
		}, []string{answerLabel}),
		reasons: map[componentKey]string{},
	}
	// Every outcome exported from the start, at 0, so that rate() sees the first event.
	for _, o := range []string{VClusterEventEnqueued, VClusterEventDeferred, VClusterEventCoalesced, VClusterEventReleased} {
		s.appEvents.WithLabelValues(o)
	}
	for _, a := range []string{FolderUnchanged, FolderChanged, FolderUnanswered} {
		s.folderCheck.WithLabelValues(a)
	}
	return s
}

func (s *set) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		s.componentPasses, s.componentReason, s.registered, s.certExpiry,
		s.apiRequests, s.apiDuration,
		s.appPlacements, s.appSyncLag, s.apps,
		s.gitPushes, s.gitDuration, s.gitBatch, s.gitRetries, s.gitClones, s.tenantCache,
		s.appEvents, s.folderCheck,
	}
}

// std is the set the package functions record into.
var std = newSet(nil)

func init() {
	ctrlmetrics.Registry.MustRegister(std.collectors()...)
}
