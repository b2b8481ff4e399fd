package controllers

import (
	"flag"
	"os"
	"strconv"
	"strings"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
)

// BindFlags registers the manager's command-line flags on fs, with opts' values as defaults: bound
// to DefaultOptions, every flag is registered with the value the operator uses when it is not
// given, so the help shows it as "(default …)".
func BindFlags(fs *flag.FlagSet, opts *Options) {
	fs.StringVar(&opts.MetricsBindAddress, "metrics-bind-address", opts.MetricsBindAddress,
		`Address of the metrics endpoint ("0" disables it; default :8443 when secure, else :8080).`)
	fs.BoolVar(&opts.MetricsSecure, "metrics-secure", opts.MetricsSecure,
		"Serve metrics over HTTPS, authenticating and authorizing each scrape (TokenReview, SubjectAccessReview).")
	fs.StringVar(&opts.MetricsCertDir, "metrics-cert-dir", opts.MetricsCertDir,
		"Directory with tls.crt and tls.key for the secure metrics endpoint (default: a self-signed certificate).")
	fs.StringVar(&opts.HealthProbeBindAddress, "health-probe-bind-address", opts.HealthProbeBindAddress,
		"Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&opts.PprofBindAddress, "pprof-bind-address", opts.PprofBindAddress,
		`Address of an unauthenticated net/http/pprof endpoint, for profiling ("" or "0": off, the default; bind it to loopback).`)
	fs.Var((*float32Value)(&opts.KubeAPIQPS), "kube-api-qps",
		"Requests per second to the Kubernetes API server, client-side.")
	fs.IntVar(&opts.KubeAPIBurst, "kube-api-burst", opts.KubeAPIBurst,
		"Burst of requests to the Kubernetes API server above --kube-api-qps.")
	fs.BoolVar(&opts.LeaderElect, "leader-elect", opts.LeaderElect,
		"Enable leader election, so only one replica reconciles at a time.")
	// The upstream iofog-operator's names, so an upstream Deployment's args keep working.
	fs.StringVar(&opts.MetricsBindAddress, "metrics-addr", opts.MetricsBindAddress,
		"Deprecated: use --metrics-bind-address.")
	fs.BoolVar(&opts.LeaderElect, "enable-leader-election", opts.LeaderElect,
		"Deprecated: use --leader-elect.")
	fs.StringVar(&opts.LeaderElectionID, "leader-election-id", opts.LeaderElectionID,
		"Name of the leader election Lease.")
	fs.StringVar(&opts.LeaderElectionNamespace, "leader-election-namespace", opts.LeaderElectionNamespace,
		"Namespace of the leader election Lease (default: the operator's namespace).")
	fs.DurationVar(&opts.LeaseDuration, "leader-elect-lease-duration", opts.LeaseDuration,
		"How long a non-leader waits before taking over an unrenewed lease.")
	fs.DurationVar(&opts.RenewDeadline, "leader-elect-renew-deadline", opts.RenewDeadline,
		"How long the leader retries renewing before it gives up leadership.")
	fs.DurationVar(&opts.RetryPeriod, "leader-elect-retry-period", opts.RetryPeriod,
		"How often leader election clients retry.")
	fs.BoolVar(&opts.EnableControlPlane, "enable-controlplane-controller", opts.EnableControlPlane,
		"Run the ControlPlane (datasance.com/v3) reconciler.")
	fs.BoolVar(&opts.EnableApps, "enable-app-controller", opts.EnableApps,
		"Run the KubeOperaApp (kubeopera.io/v1alpha1) reconciler.")
	fs.StringVar(&opts.ControlPlane.ControllerEndpointTemplate, "controller-endpoint-template", opts.ControlPlane.ControllerEndpointTemplate,
		"host:port the operator uses to reach a ControlPlane's Controller API; {namespace} and {name} are replaced "+
			"(env CONTROLLER_ENDPOINT_TEMPLATE). The scheme follows spec.controller.https.")
	fs.StringVar(&opts.ControlPlane.ControllerCAFile, "controller-ca-file", opts.ControlPlane.ControllerCAFile,
		"PEM file of extra CAs trusted for every Controller API served over HTTPS, besides the system roots and each "+
			"ControlPlane's own trust (ca.crt of spec.controller.secretName, spec.controller.caSecretRef).")
	fs.IntVar(&opts.ControlPlane.MaxConcurrentReconciles, "controlplane-max-concurrent-reconciles", opts.ControlPlane.MaxConcurrentReconciles,
		"ControlPlanes reconciled at once, so a Controller that does not answer delays only its own ControlPlane.")
	fs.DurationVar(&opts.ControlPlane.PassTimeout, "controlplane-pass-timeout", opts.ControlPlane.PassTimeout,
		"Deadline of one ControlPlane pass, every Kubernetes and Controller call included.")
	fs.DurationVar(&opts.ControlPlane.ControllerVerifyInterval, "controller-verify-interval", opts.ControlPlane.ControllerVerifyInterval,
		"How often a ready ControlPlane's Controller is asked GET /status to notice a restarted process, read the registration back and register again if it was lost.")
	fs.DurationVar(&opts.ControlPlane.ReadyGracePeriod, "controlplane-ready-grace-period", opts.ControlPlane.ReadyGracePeriod,
		"How long a ready ControlPlane whose components fail or wait (a workload not available, the Controller not answering) stays ready before it leaves ready.")
	fs.StringVar(&opts.Apps.GitCacheDir, "git-cache-dir", opts.Apps.GitCacheDir,
		"Directory for the local clones of tenant apps repositories.")
	fs.IntVar(&opts.Apps.MaxConcurrentReconciles, "app-max-concurrent-reconciles", opts.Apps.MaxConcurrentReconciles,
		"KubeOperaApps reconciled at once; apps of one repository reconciled together share one commit and push.")
	fs.DurationVar(&opts.GitBatchWindow, "git-batch-window", opts.GitBatchWindow,
		"How long the Git writer waits for other changes to the same repository branch before it commits, "+
			"so that they share one commit and one push; extended while changes keep arriving, up to five windows, "+
			"and while changes of apps being reconciled are announced, up to 50; "+
			"0 turns the wait off: only changes queued during a push are grouped.")
	fs.DurationVar(&opts.Apps.PassTimeout, "app-pass-timeout", opts.Apps.PassTimeout,
		"Deadline of one KubeOperaApp pass, every host, vCluster and Git wait included, so one tenant's slow API server or Git server holds a worker for at most this long per pass.")
	fs.Float64Var(&opts.Apps.TenantEventRate, "app-tenant-event-rate", opts.Apps.TenantEventRate,
		"Passes per second one Tenant's vCluster events may cause once its burst is spent; more wait, one per app, so one vCluster's event storm cannot occupy the workers all tenants share.")
	fs.IntVar(&opts.Apps.TenantEventBurst, "app-tenant-event-burst", opts.Apps.TenantEventBurst,
		"Passes one Tenant's vCluster events may cause at once, such as Flux applying every app of a branch after a push.")
	fs.DurationVar(&opts.Apps.SyncPollInterval, "app-sync-poll-interval", opts.Apps.SyncPollInterval,
		"Safety-net poll of an app's Flux Kustomization until it applied the pushed commit; the vCluster's Kustomizations are watched, so a change is seen at once.")
	fs.DurationVar(&opts.Apps.ResyncInterval, "app-resync-interval", opts.Apps.ResyncInterval,
		"How often a synced app is re-verified against Git and its vCluster.")
	fs.DurationVar(&opts.Apps.RetryBase, "app-retry-base", opts.Apps.RetryBase,
		"First delay before a failed app pass is retried; it doubles per consecutive failure.")
	fs.DurationVar(&opts.Apps.RetryMax, "app-retry-max", opts.Apps.RetryMax,
		"Longest delay between retries of a failing app.")
	fs.BoolVar(&opts.Apps.AllowInsecureKubeconfig, "app-allow-insecure-kubeconfig", opts.Apps.AllowInsecureKubeconfig,
		"Accept exported vCluster kubeconfigs with insecure-skip-tls-verify (development only).")
	fs.Int64Var(&opts.Apps.MaxGitRepositorySize, "app-max-git-repository-size", opts.Apps.MaxGitRepositorySize,
		"Largest local (shallow) clone of one apps repository branch, in bytes; larger ones are refused with RepositoryTooLarge (negative: no limit).")
	fs.Int64Var(&opts.Apps.MaxGitInflatedSize, "app-max-git-inflated-size", opts.Apps.MaxGitInflatedSize,
		"Most bytes the objects of one apps repository branch may inflate to (a fetch's objects, the checked-out files), counted as they are "+
			"inflated; more is refused with RepositoryTooLarge before it is in memory or on disk (negative: no limit).")
	fs.Int64Var(&opts.Apps.MaxAppFolderSize, "app-max-folder-size", opts.Apps.MaxAppFolderSize,
		"Largest rendered folder of one KubeOperaApp, in bytes; larger ones are refused with ManifestsTooLarge before anything is written (negative: no limit).")
	fs.IntVar(&opts.Apps.MaxConcurrentGitOperations, "app-max-concurrent-git-operations", opts.Apps.MaxConcurrentGitOperations,
		"Git batches (fetch, commit and push of one repository branch) running at once over all repositories; the others wait (negative: no limit).")
	fs.IntVar(&opts.Apps.MaxConcurrentGitOperationsPerHost, "app-max-concurrent-git-operations-per-host", opts.Apps.MaxConcurrentGitOperationsPerHost,
		"Git batches of one Git server (host and port) running at once; keep it below --app-max-concurrent-git-operations so that a slow server "+
			"leaves the other servers a slot (negative: no limit of its own).")
	fs.Int64Var(&opts.Apps.MaxGitCacheSize, "app-max-git-cache-size", opts.Apps.MaxGitCacheSize,
		"Most bytes the local Git clones may hold together; beyond it the least recently used idle clones are deleted "+
			"(negative: no limit). Keep the --git-cache-dir volume larger (config/manager: 3Gi).")
	fs.StringVar(&opts.Apps.GitPathPrefix, "app-git-path-prefix", opts.Apps.GitPathPrefix,
		"Folder of the apps repositories the operator writes in: every app's folder lies inside <prefix>/<host namespace>/; the repository root and dot-folders are always refused.")
	fs.BoolVar(&opts.Apps.AllowSharedRepositories, "app-allow-shared-repositories", opts.Apps.AllowSharedRepositories,
		"Let apps of several CloudSpaces write to one Git repository, whose read-only Flux credential then reads every CloudSpace's folders "+
			"(refused with RepositoryShared otherwise: a repository belongs to the CloudSpace of its oldest app).")
	fs.BoolVar(&opts.Apps.AllowInsecureGitHTTP, "app-allow-insecure-git-http", opts.Apps.AllowInsecureGitHTTP,
		"Send Git credentials over plain http:// repository URLs (development only; refused with GitInsecureTransport otherwise).")
	fs.Var((*hostList)(&opts.Apps.AllowedGitHosts), "app-allowed-git-hosts",
		`Comma-separated Git hosts spec.git.url may name, and only these: "host", "host:port" or "*.domain" `+
			`(empty: any public host; a cluster-internal or private one, such as gitea, git.ns.svc or 10.0.0.5, only with --app-allow-internal-git-hosts; `+
			`a cloud metadata endpoint only when an entry names it exactly; refused with GitHostNotAllowed).`)
	fs.BoolVar(&opts.Apps.AllowInternalGitHosts, "app-allow-internal-git-hosts", opts.Apps.AllowInternalGitHosts,
		"With an empty --app-allowed-git-hosts, let spec.git.url name cluster-internal and private hosts too "+
			"(single-label names, names under .svc, .cluster.local, .local, .internal or .localhost, loopback, private, CGNAT and link-local addresses): any host but a cloud metadata endpoint.")
	fs.Var((*hostList)(&opts.Apps.AllowedVClusterServers), "app-allowed-vcluster-servers",
		`Comma-separated API server hosts a Tenant's kubeconfig may name (after its localhost server is replaced by the vcluster Service), and only these, same format; `+
			`a value replaces the default, the in-cluster Services (empty: the default; refused with VClusterServerNotAllowed).`)
	fs.Var((*hostList)(&opts.Apps.AllowedIngressHosts), "app-allowed-ingress-hosts",
		`Comma-separated hosts spec.ingress.host may claim: exact names or "*.domain" (every name below domain, wildcard hosts included); `+
			`"{namespace}" stands for the app's namespace, e.g. "*.{namespace}.apps.example.com" (default: any host; refused with IngressHostNotAllowed).`)
	fs.Var((*hostList)(&opts.Apps.AllowedClusterIssuers), "app-allowed-cluster-issuers",
		"Comma-separated cert-manager ClusterIssuers a TLS Ingress may name in spec.ingress.clusterIssuer (default: any; refused with ClusterIssuerNotAllowed).")
}

// float32Value is a float32 flag value; the flag package has none.
type float32Value float32

func (v *float32Value) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 32) }

func (v *float32Value) Set(s string) error {
	f, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return err
	}
	*v = float32Value(f)
	return nil
}

// hostList is a comma-separated flag value (hosts, host patterns or names).
type hostList []string

func (l *hostList) String() string { return strings.Join(*l, ",") }

func (l *hostList) Set(v string) error {
	*l = nil
	for _, h := range strings.Split(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			*l = append(*l, h)
		}
	}
	return nil
}

// ImagesFromEnv fills the default operand images from the RELATED_IMAGE_* variables OLM sets
// (the bundle lists the same images in spec.relatedImages). Unset variables keep the built-in
// defaults.
func ImagesFromEnv(images controlplane.Images) controlplane.Images {
	if v := os.Getenv("RELATED_IMAGE_CONTROLLER"); v != "" {
		images.Controller = v
	}
	if v := os.Getenv("RELATED_IMAGE_ROUTER"); v != "" {
		images.Router = v
	}
	if v := os.Getenv("RELATED_IMAGE_NATS"); v != "" {
		images.Nats = v
	}
	return images
}
