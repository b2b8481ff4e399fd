package e2e

import (
	"context"
	"io"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/testbed"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// env is one run of the App Controller: a host API server with the operator, a tenant cluster of
// the test bed standing in for the vCluster with the real Flux controllers in it, and a Git
// server on loopback. Everything stops at the end of the test (Flux first).
type env struct {
	host   *apptest.Cluster
	tenant *testbed.Cluster
	git    *apptest.GitServer
	flux   *Flux
	// tenantKubeconfig is the vCluster's exported (admin) kubeconfig.
	tenantKubeconfig []byte
}

// startEnv starts the environment of one test; fo changes how the Flux controllers run.
func startEnv(t *testing.T, g Gomega, fo apptest.FluxOptions, opts ...func(*app.Options)) *env {
	t.Helper()
	log.SetOutput(io.Discard) // the Git server logs every request
	if os.Getenv("KUBEOPERA_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	ctx := context.Background()
	start := time.Now()
	e := &env{}
	fluxDir, err := apptest.FluxDir()
	skipOrFail(t, err)
	e.host, err = apptest.StartCluster(apptest.HostCRDDirs(false)...)
	skipOrFail(t, err)
	t.Cleanup(func() { _ = e.host.Stop() })
	// cert-manager's Certificate kind is served (its CRD only; the tests write what cert-manager
	// would), as in a vCluster where cert-manager is installed.
	certManagerCRDs, err := apptest.CertManagerCRDDir()
	skipOrFail(t, err)
	// The vCluster is a cluster of the test bed: its Deployments get pods, scheduled and reported
	// running by kwok, so Flux's health checks and the app's replicas follow real rollouts.
	e.tenant = testbed.StartForTest(ctx, t, testbed.Options{API: testenv.Options{CRDDirs: []string{filepath.Join(fluxDir, "crds"), certManagerCRDs}}})
	e.git, err = apptest.StartGitServer("git", "e2e-s3cr3t")
	skipOrFail(t, err)
	t.Cleanup(e.git.Stop)

	// Flux in the "vCluster", as tenant-controller bootstraps it: its namespace, its controllers.
	g.Expect(e.tenant.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}})).To(Succeed())
	e.tenantKubeconfig, err = e.tenant.Kubeconfig("vcluster-admin")
	g.Expect(err).NotTo(HaveOccurred())
	work := t.TempDir()
	kubeconfigFile := filepath.Join(work, "tenant.kubeconfig")
	g.Expect(os.WriteFile(kubeconfigFile, e.tenantKubeconfig, 0o600)).To(Succeed())
	e.flux, err = apptest.StartFluxWith(ctx, fluxDir, kubeconfigFile, work, fo)
	g.Expect(err).NotTo(HaveOccurred())
	// Registered last, so it runs first: Flux stops before the API servers.
	t.Cleanup(func() {
		e.flux.Stop()
		if t.Failed() {
			dumpLogs(t, e.flux.LogDir)
		}
	})

	// The operator on the host.
	mgrCtx, cancel := context.WithCancel(ctx)
	done := runOperator(mgrCtx, t, e.host, opts...)
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})
	t.Logf("environment up in %s", time.Since(start).Round(time.Millisecond))
	return e
}

// cloudSpace creates a CloudSpace on the host: a namespace with a Ready Tenant of the vCluster
// and its exported kubeconfig, the push credentials "git" and the read-only credentials
// "git-readonly" Flux fetches with. It returns the namespace.
func (e *env) cloudSpace(g Gomega, tenant, cloudSpace string) string {
	ctx := context.Background()
	ns, err := apptest.Namespace(ctx, e.host.Client, "cs")
	g.Expect(err).NotTo(HaveOccurred())
	err = apptest.CreateTenant(ctx, e.host.Client, testfixture.Tenant(
		testfixture.TenantInNamespace(ns), testfixture.TenantNamed(tenant), testfixture.TenantCloudSpace(cloudSpace),
		testfixture.TenantReady(time.Now()),
	))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.host.Client.Create(ctx, apptest.KubeconfigSecret(ns, "vc-"+tenant, e.tenantKubeconfig))).To(Succeed())
	g.Expect(e.host.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"}, Data: e.git.SecretData(),
	})).To(Succeed())
	// Flux fetches with read-only credentials: the push credentials never enter the vCluster.
	g.Expect(e.host.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git-readonly", Labels: map[string]string{kubeoperav1alpha1.LabelFluxCredentials: "true"}}, Data: e.git.ReadOnlySecretData(),
	})).To(Succeed())
	return ns
}

// app builds an app of the CloudSpace ns in Tenant tenant, committed to repo with the
// CloudSpace's credentials, changed by mods.
func (e *env) app(ns, name, tenant, cloudSpace, repo string, mods ...testfixture.AppMod) *kubeoperav1alpha1.KubeOperaApp {
	return testfixture.KubeOperaApp(append([]testfixture.AppMod{
		testfixture.AppInNamespace(ns), testfixture.AppNamed(name),
		testfixture.AppCloudSpace(cloudSpace), testfixture.AppTenant(tenant), testfixture.AppExampleWorkload(name),
		testfixture.AppGitURL(e.git.URL(repo)), testfixture.AppGitSecret("git"), testfixture.AppFluxSecret("git-readonly"),
		func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Flux.Interval = "10s" },
	}, mods...)...)
}
