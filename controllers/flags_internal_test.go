package controllers

import (
	"bytes"
	"flag"
	"io"
	"strconv"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/controllers/app"
)

// The upstream iofog-operator's flags are accepted as aliases, so its Deployment's args do not
// make the process exit 2; the ControlPlane pacing flags reach the reconciler's options.
func TestFlagsAcceptUpstreamAliasesAndControlPlanePacing(t *testing.T) {
	g := NewWithT(t)
	opts := parseFlags(g,
		"--metrics-addr=:9090", "--enable-leader-election",
		"--controlplane-max-concurrent-reconciles=7", "--controlplane-pass-timeout=30s", "--controller-verify-interval=1m",
	)
	g.Expect(opts.MetricsBindAddress).To(Equal(":9090"))
	g.Expect(opts.LeaderElect).To(BeTrue())
	g.Expect(opts.ControlPlane.MaxConcurrentReconciles).To(Equal(7))
	g.Expect(opts.ControlPlane.PassTimeout).To(Equal(30 * time.Second))
	g.Expect(opts.ControlPlane.ControllerVerifyInterval).To(Equal(time.Minute))

	defaults := DefaultOptions()
	g.Expect(defaults.ControlPlane.MaxConcurrentReconciles).To(BeNumerically(">", 1))
	g.Expect(defaults.ControlPlane.ControllerVerifyInterval).To(Equal(30*time.Second),
		"a restarted Controller is noticed within 30 s by default (docs/controlplane.md#controller-restarts)")
}

// The Ingress allow-lists reach the App Controller's options as lists; empty by default (any).
func TestFlagsIngressAllowLists(t *testing.T) {
	g := NewWithT(t)
	defaults := DefaultOptions()
	g.Expect(defaults.Apps.AllowedIngressHosts).To(BeEmpty())
	g.Expect(defaults.Apps.AllowedClusterIssuers).To(BeEmpty())
	opts := parseFlags(g,
		"--app-allowed-ingress-hosts=*.apps.example.com, shop.example.com,*.{namespace}.tenants.example.com",
		"--app-allowed-cluster-issuers=letsencrypt-prod,internal-ca",
	)
	g.Expect(opts.Apps.AllowedIngressHosts).To(Equal([]string{"*.apps.example.com", "shop.example.com", "*.{namespace}.tenants.example.com"}))
	g.Expect(opts.Apps.AllowedClusterIssuers).To(Equal([]string{"letsencrypt-prod", "internal-ca"}))
}

// The connection allow-lists: the vCluster server list defaults to the cluster's Services and a
// value replaces it (an empty value keeps the default); the Git host list is empty (any public
// host) and cluster-internal Git hosts are refused unless --app-allow-internal-git-hosts is given.
func TestFlagsConnectionAllowLists(t *testing.T) {
	g := NewWithT(t)
	opts := parseFlags(g)
	g.Expect(opts.Apps.AllowedVClusterServers).To(Equal([]string{"*.svc", "*.svc.cluster.local"}))
	g.Expect(opts.Apps.AllowedGitHosts).To(BeEmpty())
	g.Expect(opts.Apps.AllowInternalGitHosts).To(BeFalse())

	opts = parseFlags(g,
		"--app-allowed-vcluster-servers=127.0.0.1, *.vclusters.example.com", "--app-allowed-git-hosts=gitea.git.svc:3000",
		"--app-allow-internal-git-hosts",
	)
	g.Expect(opts.Apps.AllowedVClusterServers).To(Equal([]string{"127.0.0.1", "*.vclusters.example.com"}), "replaced, not added to")
	g.Expect(opts.Apps.AllowedGitHosts).To(Equal([]string{"gitea.git.svc:3000"}))
	g.Expect(opts.Apps.AllowInternalGitHosts).To(BeTrue())

	opts = parseFlags(g, "--app-allowed-vcluster-servers=", "--app-allow-internal-git-hosts=false")
	g.Expect(opts.Apps.AllowedVClusterServers).To(BeEmpty(), "the reconciler reads an empty list as the default")
	g.Expect(opts.Apps.AllowInternalGitHosts).To(BeFalse())
}

// The Git bounds reach the App Controller's options; without the flags they hold the reconciler's
// defaults.
func TestFlagsSetTheGitBounds(t *testing.T) {
	g := NewWithT(t)
	opts := parseFlags(g,
		"--app-max-git-inflated-size=1048576", "--app-max-concurrent-git-operations=2", "--app-max-git-cache-size=-1",
		"--app-max-concurrent-git-operations-per-host=1",
	)
	g.Expect(opts.Apps.MaxConcurrentGitOperationsPerHost).To(Equal(1))
	g.Expect(opts.Apps.MaxGitInflatedSize).To(Equal(int64(1 << 20)))
	g.Expect(opts.Apps.MaxConcurrentGitOperations).To(Equal(2))
	g.Expect(opts.Apps.MaxGitCacheSize).To(Equal(int64(-1)))

	defaults := DefaultOptions()
	g.Expect(defaults.Apps.MaxGitInflatedSize).To(BeEquivalentTo(app.DefaultMaxGitInflatedSize))
	g.Expect(defaults.Apps.MaxConcurrentGitOperations).To(Equal(app.DefaultMaxConcurrentGitOperations))
	g.Expect(defaults.Apps.MaxConcurrentGitOperationsPerHost).To(Equal(app.DefaultMaxConcurrentGitOperationsPerHost))
	g.Expect(defaults.Apps.MaxGitCacheSize).To(BeEquivalentTo(app.DefaultMaxGitCacheSize))
}

// Every flag is registered with the value the operator uses when the flag is not given, so the
// help prints it as "(default …)", the way the flag package shows the defaults of its own flags.
// Help that explains a zero instead ("(0: 50)"), or a flag registered with 0 while the code puts
// another value in its place, would hide the real default.
func TestFlagsShowTheirRealDefaults(t *testing.T) {
	g := NewWithT(t)
	opts := DefaultOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	BindFlags(fs, &opts)
	var help bytes.Buffer
	fs.SetOutput(&help)
	fs.PrintDefaults()
	g.Expect(help.String()).NotTo(ContainSubstring("(0:"))
	g.Expect(help.String()).To(ContainSubstring("Requests per second to the Kubernetes API server, client-side. (default 50)"),
		"a flag of a type of its own shows its default too")

	numeric := 0
	fs.VisitAll(func(f *flag.Flag) {
		if _, err := strconv.ParseFloat(f.DefValue, 64); err == nil {
			numeric++
		} else if _, err := time.ParseDuration(f.DefValue); err == nil {
			numeric++
		}
		switch f.DefValue {
		case "0", "0s":
			t.Errorf("--%s is registered with %s: register it with the value the operator uses in its place "+
				"(or, if 0 is that value, let this test know)", f.Name, f.DefValue)
		}
	})
	g.Expect(numeric).To(BeNumerically(">", 20), "the numeric flags were found")

	// Zero values in the options still mean the defaults, whoever builds them.
	cfg := hostConfig(&rest.Config{}, Options{})
	g.Expect(cfg.QPS).To(Equal(opts.KubeAPIQPS))
	g.Expect(cfg.Burst).To(Equal(opts.KubeAPIBurst))
	g.Expect(durationOrNil(0)).To(BeNil(), "zero leaves leader election to controller-runtime, whose defaults these are")
}

// parseFlags binds the manager's flags to the default options and parses args.
func parseFlags(g Gomega, args ...string) Options {
	opts := DefaultOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	BindFlags(fs, &opts)
	g.Expect(fs.Parse(args)).To(Succeed())
	return opts
}

// The host API rate limits: 50/100 unless --kube-api-qps and --kube-api-burst say otherwise,
// whatever the loaded kubeconfig carried (controller-runtime's GetConfig sets 20/30).
func TestFlagsSetTheHostAPIRateLimits(t *testing.T) {
	g := NewWithT(t)
	loaded := &rest.Config{Host: "https://example.invalid", QPS: 20, Burst: 30}
	cfg := hostConfig(loaded, DefaultOptions())
	g.Expect(cfg.QPS).To(BeEquivalentTo(DefaultKubeAPIQPS))
	g.Expect(cfg.Burst).To(Equal(DefaultKubeAPIBurst))
	g.Expect(cfg.DisableCompression).To(BeTrue())
	g.Expect(loaded.QPS).To(BeEquivalentTo(20), "the caller's config is not changed")

	opts := parseFlags(g, "--kube-api-qps=7.5", "--kube-api-burst=9")
	cfg = hostConfig(loaded, opts)
	g.Expect(cfg.QPS).To(BeEquivalentTo(7.5))
	g.Expect(cfg.Burst).To(Equal(9))
}
