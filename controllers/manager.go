// Package controllers wires the ControlPlane and KubeOperaApp reconcilers into one
// controller-runtime manager: flags, WATCH_NAMESPACE, cache scope (cache.go), health checks. main.go and the
// local development environment (hack/devenv) share it, so `make run` runs exactly what ships.
//
// Dependencies point one way: main and hack → controllers → controllers/<reconciler> → internal/*.
// No internal package imports a controllers package (test/architecture checks it).
package controllers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/scheme"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
)

// Name is the project's one name: module, binary, OLM package, app.kubernetes.io/name label.
const Name = "kubeopera-operator"

// DefaultLeaderElectionID is the upstream operator's lease name, kept so that an upgrade from it
// never runs two leaders.
const DefaultLeaderElectionID = "iofog.operator"

// Options configure the manager.
type Options struct {
	// MetricsBindAddress serves /metrics; "0" disables it, "" is :8443 (secure) or :8080.
	MetricsBindAddress string
	// MetricsSecure serves /metrics over HTTPS with authentication and authorization.
	MetricsSecure bool
	// MetricsCertDir holds tls.crt and tls.key for the secure endpoint; "" self-signs.
	MetricsCertDir string
	// HealthProbeBindAddress serves /healthz and /readyz.
	HealthProbeBindAddress string
	// PprofBindAddress serves net/http/pprof (heap profiles for test/bench); "" or "0" is off,
	// the default. Bind it to loopback: it is unauthenticated.
	PprofBindAddress string
	// LeaderElect turns leader election on.
	LeaderElect bool
	// LeaderElectionID is the Lease name.
	LeaderElectionID string
	// LeaderElectionNamespace is where the Lease lives; empty means the pod's namespace.
	LeaderElectionNamespace string
	// LeaseDuration, RenewDeadline and RetryPeriod tune leader election (DefaultLeaseDuration,
	// DefaultRenewDeadline, DefaultRetryPeriod); zero leaves them to controller-runtime, whose
	// defaults are the same.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// WatchNamespaces restricts the cache; nil means all namespaces (see ParseWatchNamespaces).
	WatchNamespaces []string
	// KubeAPIQPS and KubeAPIBurst limit the manager's requests to the host API server
	// (client-side rate limit); zero or less means DefaultKubeAPIQPS and DefaultKubeAPIBurst.
	KubeAPIQPS   float32
	KubeAPIBurst int

	// EnableControlPlane runs the ControlPlane reconciler.
	EnableControlPlane bool
	// EnableApps runs the KubeOperaApp reconciler.
	EnableApps bool

	// ControlPlane configures the ControlPlane reconciler.
	ControlPlane controlplane.Options
	// Apps configures the KubeOperaApp reconciler.
	Apps app.Options
	// GitBatchWindow is how long the Git writer waits after an app's change before it commits,
	// so that apps of one repository reconciled one after the other share a push; 0 disables
	// it (gitops.WithBatchWindow).
	GitBatchWindow time.Duration
}

// DefaultKubeAPIQPS and DefaultKubeAPIBurst are the host API server rate limits the manager
// uses when none is given (--kube-api-qps, --kube-api-burst). controller-runtime's 20 and 30 cap
// an operator of 1,000 apps at a few apps a second: every first pass makes about six host
// requests (make bench P5, 2026-12-05: 1,000 apps Synced in 309 s, 3.2 apps/s). 50 and 100 are
// Flux's default QPS and a burst that lets a burst of apps start at once; the API server's
// priority and fairness still protects it.
const (
	DefaultKubeAPIQPS   = 50
	DefaultKubeAPIBurst = 100
)

// Leader election timings: controller-runtime's own defaults (defaultLeaseDuration,
// defaultRenewDeadline and defaultRetryPeriod in sigs.k8s.io/controller-runtime/pkg/manager),
// named here so that the flags show them.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// hostConfig is a copy of cfg with the manager's transport settings: no gzip (see New) and the
// rate limits of opts.
func hostConfig(cfg *rest.Config, opts Options) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	cfg.QPS, cfg.Burst = opts.KubeAPIQPS, opts.KubeAPIBurst
	if cfg.QPS <= 0 {
		cfg.QPS = DefaultKubeAPIQPS
	}
	if cfg.Burst <= 0 {
		cfg.Burst = DefaultKubeAPIBurst
	}
	return cfg
}

// DefaultOptions returns the options main.go starts from: every value the operator uses when no
// flag says otherwise, so that BindFlags registers each flag with its real default.
func DefaultOptions() Options {
	apps := app.DefaultOptions()
	apps.GitCacheDir = filepath.Join(os.TempDir(), Name, "git")
	return Options{
		MetricsSecure:          true,
		HealthProbeBindAddress: ":8081",
		LeaderElectionID:       DefaultLeaderElectionID,
		LeaseDuration:          DefaultLeaseDuration,
		RenewDeadline:          DefaultRenewDeadline,
		RetryPeriod:            DefaultRetryPeriod,
		KubeAPIQPS:             DefaultKubeAPIQPS,
		KubeAPIBurst:           DefaultKubeAPIBurst,
		EnableControlPlane:     true,
		EnableApps:             true,
		ControlPlane:           controlplane.DefaultOptions(),
		GitBatchWindow:         gitops.DefaultBatchWindow,
		Apps:                   apps,
	}
}

// Scheme returns a scheme with every type the manager reads or writes.
func Scheme() *runtime.Scheme { return scheme.New() }

// New builds the manager with the enabled reconcilers and health checks. It does not start it.
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	if !opts.EnableControlPlane && !opts.EnableApps {
		return nil, errors.New("both reconcilers are disabled: nothing to run")
	}
	// No gzip on the API server's responses (docs/benchmarks.md, "Cache scope"): the operator runs
	// beside the API server, and every gzip-encoded watch holds an inflater with a 32 KB window
	// for as long as it runs (4.6 MB of live heap over the watches of 100 ControlPlanes).
	cfg = hostConfig(cfg, opts)
	cacheOpts := cache.Options{ByObject: mainCacheByObject()}
	if len(opts.WatchNamespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.WatchNamespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	var secretHolders []client.Object
	if opts.EnableControlPlane {
		secretHolders = append(secretHolders, &datasancev3.ControlPlane{})
	}
	if opts.EnableApps {
		secretHolders = append(secretHolders, &kubeoperav1alpha1.KubeOperaApp{})
	}
	var uncached []client.Object
	if opts.EnableControlPlane {
		uncached = controlplane.UncachedObjects()
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: Scheme(),
		Cache:  cacheOpts,
		// The kinds a reconciler reads only from the API server: never watched, never cached.
		Client:                  client.Options{Cache: &client.CacheOptions{DisableFor: uncached}},
		NewCache:                newScopedSecretsCache(secretHolders...),
		Metrics:                 metricsServerOptions(opts),
		HealthProbeBindAddress:  opts.HealthProbeBindAddress,
		PprofBindAddress:        opts.PprofBindAddress,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        opts.LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		LeaseDuration:           durationOrNil(opts.LeaseDuration),
		RenewDeadline:           durationOrNil(opts.RenewDeadline),
		RetryPeriod:             durationOrNil(opts.RetryPeriod),
		// The manager exits right after losing the lease, so a new leader takes over quickly.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add ready check: %w", err)
	}

	if opts.EnableControlPlane {
		scc, err := controlplane.ServesSCC(mgr.GetRESTMapper())
		if err != nil {
			return nil, err
		}
		opts.ControlPlane.OpenShiftSCC = scc
		r := controlplane.NewReconciler(mgr, opts.ControlPlane)
		owned, err := ownedCache(cfg, mgr, cacheOpts.DefaultNamespaces)
		if err != nil {
			return nil, err
		}
		r.Client = secretReads{Client: r.Client, owned: owned, live: mgr.GetAPIReader()}
		if err := r.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("set up ControlPlane reconciler: %w", err)
		}
	}
	if opts.EnableApps {
		opts.Apps.GitOptions = append([]gitops.Option{gitops.WithBatchWindow(opts.GitBatchWindow)}, opts.Apps.GitOptions...)
		r, err := app.NewReconciler(mgr, opts.Apps)
		if err != nil {
			return nil, fmt.Errorf("create KubeOperaApp reconciler: %w", err)
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return nil, fmt.Errorf("set up KubeOperaApp reconciler: %w", err)
		}
	}
	return mgr, nil
}

// durationOrNil is nil for zero (controller-runtime's default) and a pointer to d otherwise.
func durationOrNil(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}
