package app

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// Default timings of the KubeOperaApp reconciler. Every one can be overridden in Options, so
// tests assert the values instead of waiting for them.
const (
	// DefaultRetryBase is the first retry after a failure that depends on the vCluster or on
	// Git. Failures are returned as errors, so the workqueue's per-item rate limiter schedules
	// the retry (and controller-runtime's error metrics count it): each further consecutive
	// failure of the same app doubles the delay, up to DefaultRetryMax; a success resets it.
	DefaultRetryBase = 30 * time.Second
	// DefaultRetryMax caps the failure backoff.
	DefaultRetryMax = 10 * time.Minute
	// DefaultSyncPollInterval is the requeue while Flux has not applied the pushed commit yet.
	// The Kustomization watch (tenantwatch.go) brings the app back as soon as Flux reports;
	// this poll is only the safety net for a vCluster that cannot be watched.
	DefaultSyncPollInterval = 2 * time.Minute
	// DefaultResyncInterval is the requeue once the app is Synced: the Kustomization is read
	// back and the Git folder re-verified (external edits are repaired) this often.
	DefaultResyncInterval = 10 * time.Minute
	// DefaultDeletePollInterval is the requeue while the deleted Kustomization still exists
	// (Flux is pruning what it applied).
	DefaultDeletePollInterval = 2 * time.Second
	// DefaultKustomizationDeleteTimeout is how long deletion waits for Flux to finish deleting
	// the Kustomization before it reports KustomizationStuck (it keeps waiting; see
	// reconcileDelete for the explicit escape).
	DefaultKustomizationDeleteTimeout = 5 * time.Minute
	// DefaultTenantAPIRetry is the requeue while the Tenant CRD is not installed.
	DefaultTenantAPIRetry = 5 * time.Minute
	// DefaultVClusterTimeout bounds every request to a vCluster.
	DefaultVClusterTimeout = 15 * time.Second
	// DefaultPassTimeout bounds one pass: every host, vCluster and Git wait of it (the status
	// patch runs after it, on its own). A tenant whose API server answers each request just
	// before DefaultVClusterTimeout, or a Git server that holds its batch, keeps a worker for at
	// most this long per pass; the pass then fails like any unreachable vCluster and is
	// retried with the backoff. Longer than one Git batch (gitops.DefaultTimeout), so a pass
	// that waits for its own folder's removal sees the outcome.
	DefaultPassTimeout = 3 * time.Minute
	// DefaultVClusterQPS and DefaultVClusterBurst limit the requests to one vCluster. client-go's
	// own defaults (5 and 10) would make a burst of apps wait on the client, not on the vCluster.
	DefaultVClusterQPS   = 50
	DefaultVClusterBurst = 100
	// DefaultMaxGitRepositorySize bounds the local (shallow) clone of one repository branch:
	// an apps repository holds small YAML files, so 256 MiB is far beyond a real one and still
	// keeps a huge repository named by mistake (or on purpose) from filling the operator's disk.
	DefaultMaxGitRepositorySize = 256 << 20
	// DefaultMaxGitInflatedSize bounds what the objects of one repository branch inflate to (a
	// fetch's objects, and the files of the checked-out tree): about eight thousand apps of 4 KiB.
	// go-git holds an object whole in memory while it indexes a fetched pack, so with
	// DefaultMaxConcurrentGitOperations fetches at once the worst case stays well under the
	// manager's 512 MiB memory limit (docs/operability.md, "Git cache and memory").
	DefaultMaxGitInflatedSize = 32 << 20
	// DefaultMaxAppFolderSize bounds the rendered manifests of one app (its folder): a usual
	// app renders a few KiB, and env values, command and args at their admission limits
	// (208 KiB of characters together) still fit. With DefaultMaxGitInflatedSize a repository
	// holds at least 128 apps of this size.
	DefaultMaxAppFolderSize = 256 << 10
	// DefaultMaxConcurrentGitOperations bounds the Git batches (fetch, commit, push of one branch)
	// running at once over every repository.
	DefaultMaxConcurrentGitOperations = 4
	// DefaultMaxConcurrentGitOperationsPerHost bounds the batches of one Git server among them:
	// a server that answers slowly (or not until the batch's timeout) holds at most three of the
	// four slots, and the repositories of every other server still find one.
	DefaultMaxConcurrentGitOperationsPerHost = 3
	// DefaultMaxGitCacheSize bounds the clones kept on disk; idle ones are evicted beyond it.
	// config/manager gives the cache volume room for it plus the running batches.
	DefaultMaxGitCacheSize = 1 << 30
	// DefaultMaxConcurrentReconciles lets apps of one repository be reconciled together, so
	// the Git writer can group their changes into one commit and one push.
	DefaultMaxConcurrentReconciles = 16
	// DefaultGitPathPrefix is the folder of the apps repository the operator writes in: the
	// default app folder is apps/<namespace>/<name>, and nothing outside apps/ (a Flux
	// bootstrap path such as clusters/prod, the repository's own files) is ever written.
	DefaultGitPathPrefix = render.DefaultPathPrefix
)

// Options configure the KubeOperaApp reconciler. Zero values take the defaults above
// (DefaultOptions holds them all).
type Options struct {
	// GitCacheDir holds one local clone per (repository, branch).
	GitCacheDir string
	// MaxConcurrentReconciles is the number of apps reconciled at once.
	MaxConcurrentReconciles int

	// RetryBase and RetryMax shape the failure backoff (see DefaultRetryBase).
	RetryBase time.Duration
	RetryMax  time.Duration
	// SyncPollInterval is the requeue while Flux has not applied the pushed commit.
	SyncPollInterval time.Duration
	// ResyncInterval is the requeue once the app is Synced.
	ResyncInterval time.Duration
	// DeletePollInterval is the requeue while the Kustomization is being deleted.
	DeletePollInterval time.Duration
	// KustomizationDeleteTimeout bounds the wait for the Kustomization's deletion.
	KustomizationDeleteTimeout time.Duration
	// TenantAPIRetry is the requeue while the Tenant CRD is missing.
	TenantAPIRetry time.Duration

	// VClusterTimeout bounds every request to a vCluster.
	VClusterTimeout time.Duration
	// PassTimeout bounds one pass (see DefaultPassTimeout).
	PassTimeout time.Duration
	// TenantEventRate and TenantEventBurst pace, per Tenant, the passes its vCluster's events
	// cause (tenantpacer.go): passes per second, and how many at once.
	TenantEventRate  float64
	TenantEventBurst int
	// VClusterQPS and VClusterBurst limit the requests to one vCluster.
	VClusterQPS   float32
	VClusterBurst int
	// AllowInsecureKubeconfig accepts exported kubeconfigs with insecure-skip-tls-verify.
	AllowInsecureKubeconfig bool
	// NewVClusterClient builds vCluster clients; nil means tenant.NewClient with the manager's
	// scheme.
	NewVClusterClient tenant.NewClientFunc

	// AllowedGitHosts restricts the hosts of spec.git.url ("host", "host:port", "*.domain"):
	// only these when set; empty allows any host but a cluster-internal or private one
	// (allowlist.go). A cloud metadata endpoint is allowed only when an entry names it exactly.
	AllowedGitHosts []string
	// AllowInternalGitHosts lets an empty AllowedGitHosts allow cluster-internal and private
	// hosts too (--app-allow-internal-git-hosts): any host but a cloud metadata endpoint. With
	// entries in AllowedGitHosts, the entries alone decide.
	AllowInternalGitHosts bool
	// AllowedVClusterServers restricts the API servers of Tenants' kubeconfigs, after the
	// localhost replacement, in the same format: only these; empty means
	// DefaultAllowedVClusterServers (the cluster's Services).
	AllowedVClusterServers []string
	// AllowedIngressHosts restricts spec.ingress.host ("name" exactly, "*.domain" any name below
	// domain); empty allows any (see allowlist.go).
	AllowedIngressHosts []string
	// AllowedClusterIssuers restricts spec.ingress.clusterIssuer of a TLS Ingress to these
	// names; empty allows any.
	AllowedClusterIssuers []string

	// GitPathPrefix is the folder of the apps repositories the operator writes in
	// (--app-git-path-prefix); empty: DefaultGitPathPrefix. Every app's folder lies strictly
	// inside <prefix>/<host namespace>/ (render.NamespaceFolder); the repository root and
	// dot-folders are reserved whatever the prefix.
	GitPathPrefix string
	// AllowSharedRepositories lets apps of several CloudSpaces write to one repository
	// (--app-allow-shared-repositories); otherwise a repository belongs to the CloudSpace of its
	// oldest app and the others are RepositoryShared (sharedrepo.go).
	AllowSharedRepositories bool
	// AllowInsecureGitHTTP allows sending Git credentials over plain http://
	// (--app-allow-insecure-git-http; development only).
	AllowInsecureGitHTTP bool

	// MaxGitRepositorySize bounds the local clone of one repository branch in bytes
	// (RepositoryTooLarge beyond it); negative means no limit.
	MaxGitRepositorySize int64
	// MaxGitInflatedSize bounds what the objects of one repository branch inflate to, in bytes
	// (RepositoryTooLarge beyond it); negative means no limit.
	MaxGitInflatedSize int64
	// MaxAppFolderSize bounds the rendered manifests of one app in bytes (ManifestsTooLarge
	// beyond it); negative means no limit.
	MaxAppFolderSize int64
	// MaxConcurrentGitOperations bounds the Git batches running at once; negative means no
	// limit.
	MaxConcurrentGitOperations int
	// MaxConcurrentGitOperationsPerHost bounds the Git batches of one Git server (host and port)
	// running at once; negative means no limit of its own.
	MaxConcurrentGitOperationsPerHost int
	// MaxGitCacheSize bounds the clones kept on disk, in bytes; negative means no limit.
	MaxGitCacheSize int64

	// GitOptions are passed to the Git writer after the reconciler's own (author).
	GitOptions []gitops.Option

	// OnPass, when set, is called at the end of every pass with the app's key. Tests count
	// passes with it (a bad input must not cause a hot loop); production code has no use for it.
	OnPass func(types.NamespacedName)
}

// DefaultOptions returns the options with every default filled in: what the zero value means. The
// manager's flags are registered with these values, so their help shows the real defaults.
func DefaultOptions() Options {
	return Options{}.withDefaults()
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.RetryBase, DefaultRetryBase)
	def(&o.RetryMax, DefaultRetryMax)
	def(&o.SyncPollInterval, DefaultSyncPollInterval)
	def(&o.ResyncInterval, DefaultResyncInterval)
	def(&o.DeletePollInterval, DefaultDeletePollInterval)
	def(&o.KustomizationDeleteTimeout, DefaultKustomizationDeleteTimeout)
	def(&o.TenantAPIRetry, DefaultTenantAPIRetry)
	def(&o.VClusterTimeout, DefaultVClusterTimeout)
	def(&o.PassTimeout, DefaultPassTimeout)
	if o.TenantEventRate <= 0 {
		o.TenantEventRate = DefaultTenantEventRate
	}
	if o.TenantEventBurst <= 0 {
		o.TenantEventBurst = DefaultTenantEventBurst
	}
	if o.VClusterQPS <= 0 {
		o.VClusterQPS = DefaultVClusterQPS
	}
	if o.VClusterBurst <= 0 {
		o.VClusterBurst = DefaultVClusterBurst
	}
	if o.MaxGitRepositorySize == 0 {
		o.MaxGitRepositorySize = DefaultMaxGitRepositorySize
	}
	if o.MaxGitInflatedSize == 0 {
		o.MaxGitInflatedSize = DefaultMaxGitInflatedSize
	}
	if o.MaxAppFolderSize == 0 {
		o.MaxAppFolderSize = DefaultMaxAppFolderSize
	}
	if o.MaxConcurrentGitOperations == 0 {
		o.MaxConcurrentGitOperations = DefaultMaxConcurrentGitOperations
	}
	if o.MaxConcurrentGitOperationsPerHost == 0 {
		o.MaxConcurrentGitOperationsPerHost = DefaultMaxConcurrentGitOperationsPerHost
	}
	if o.MaxGitCacheSize == 0 {
		o.MaxGitCacheSize = DefaultMaxGitCacheSize
	}
	if o.GitPathPrefix = strings.Trim(o.GitPathPrefix, "/"); o.GitPathPrefix == "" {
		o.GitPathPrefix = DefaultGitPathPrefix
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	if len(o.AllowedVClusterServers) == 0 {
		o.AllowedVClusterServers = DefaultAllowedVClusterServers()
	}
	return o
}

// newRateLimiter is the per-app retry policy of failed passes: RetryBase, doubling per
// consecutive failure, capped at RetryMax, forgotten on success. The count lives in the
// workqueue: after a restart every app starts again at RetryBase.
func newRateLimiter(o Options) workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](o.RetryBase, o.RetryMax)
}
