package chaos

import (
	"context"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/test/sandbox"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// Cadences the hot-loop bounds are derived from (each documented where it is set).
const (
	// outageAppRetryBase is --app-retry-base of the outage runs: an app pass that failed is
	// retried after 1s, 2s, 4s, ... (the production default is 30s; shorter here so a run ends
	// in seconds).
	outageAppRetryBase = time.Second
	// cpRetryBase is the first delay of controller-runtime's default per-item rate limiter, which
	// the ControlPlane controller uses (5ms, doubling per failure, capped at 1000s).
	cpRetryBase = 5 * time.Millisecond
	// reflectorBackoff is client-go's first delay before a reflector lists and watches again
	// after a failure (800ms, doubling, capped at 30s).
	reflectorBackoff = 800 * time.Millisecond
	// connsPerPass bounds the connections one failing pass opens to the dependency that is down:
	// the pass stops at its first failed call, and the clients retry a refused or reset
	// connection at most once more.
	connsPerPass = 3
	// clientGoResetRetry is how often client-go's rest client retries a GET whose connection was
	// reset or ended early (it answers itself with Retry-After: 1, up to 10 retries).
	clientGoResetRetry = time.Second
)

// attemptsWithin is how many tries a retry schedule of base, 2·base, 4·base, ... fits into d,
// the first try included: 1 + ⌊log2(d/base + 1)⌋.
func attemptsWithin(d, base time.Duration) int64 {
	return 1 + int64(math.Floor(math.Log2(float64(d)/float64(base)+1)))
}

// outageManager starts the manager binary of an outage test against kubeconfigPath.
func outageManager(t *testing.T, g Gomega, kubeconfigPath string, args ...string) *testenv.Process {
	t.Helper()
	m, err := StartManager(managerBin, kubeconfigPath, filepath.Join(t.TempDir(), "manager.log"), args...)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		m.Kill()
		if t.Failed() {
			t.Logf("manager log (tail):\n%s", m.TailLog(12<<10))
		}
	})
	return m
}

// outage holds the proxy in mode for d (the fault's length, chosen by the test, not a
// synchronisation) and returns the connections accepted meanwhile and the time it lasted.
func outage(ctx context.Context, p *FaultProxy, mode Mode, d time.Duration, during func()) (int64, time.Duration) {
	begin := time.Now()
	before := p.Accepted()
	p.Set(mode)
	if during != nil {
		during()
	}
	select {
	case <-time.After(d - time.Since(begin)):
	case <-ctx.Done():
	}
	n, took := p.Accepted()-before, time.Since(begin)
	p.Set(Up)
	return n, took
}

// TestGitServerDownAndBack: the apps' Git server goes away while an app change waits to be
// pushed, and comes back. While it is down the app retries on its backoff only (counted at the
// proxy in front of the Git server); once it is back the change is pushed and synced.
func TestGitServerDownAndBack(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	u, err := url.Parse(gitServer.HTTPAddress())
	g.Expect(err).NotTo(HaveOccurred())
	proxy, err := StartFaultProxy(u.Host)
	g.Expect(err).NotTo(HaveOccurred())
	defer proxy.Close()
	ns := "outage-git"
	f := newAppFixture(ctx, g, ns, ns, "http://"+proxy.Addr()+"/"+ns+".git")
	m := outageManager(t, g, kubeconfig, append(appArgs(t.TempDir()), "--app-retry-base="+outageAppRetryBase.String())...)
	g.Expect(host.Client.Create(ctx, f.app())).To(Succeed())
	expectAppConverged(ctx, g, f, m.Exited)

	const down = 10 * time.Second
	n, took := outage(ctx, proxy, Down, down, func() {
		setImage(ctx, g, f, "ghcr.io/example/web:2.0.0")
		waitAppNotReady(ctx, g, f)
	})
	bound := attemptsWithin(took, outageAppRetryBase) * connsPerPass
	t.Logf("git down %v: %d connections (bound %d: retries every %v doubling, %d per pass)", took.Round(time.Millisecond), n, bound, outageAppRetryBase, connsPerPass)
	g.Expect(n).To(BeNumerically(">=", 1), "the app tried Git while it was down (the count can fail)")
	g.Expect(n).To(BeNumerically("<=", bound), "no hot loop against the Git server while it is down")
	a := expectAppConverged(ctx, g, f, m.Exited)
	g.Expect(a.Spec.App.Image).To(Equal("ghcr.io/example/web:2.0.0"))
	deleteApp(ctx, g, f, m.Exited)
}

// TestTenantAPIServerDownAndBack: the app's vCluster API server goes away while an app change
// waits to be placed, and comes back. The kubeconfig the Tenant exports names the proxy in front
// of the tenant API server.
func TestTenantAPIServerDownAndBack(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	u, err := url.Parse(tenant.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())
	proxy, err := StartFaultProxy(u.Host)
	g.Expect(err).NotTo(HaveOccurred())
	defer proxy.Close()
	ns := "outage-tenant"
	f := newAppFixture(ctx, g, ns, ns, gitServer.URL(ns))
	// The Tenant's exported kubeconfig names the proxy.
	g.Expect(host.Client.Patch(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vc-" + appTenant},
		Data:       map[string][]byte{"config": kubeconfigVia(g, tenantKubeconfig, proxy.Addr())},
	}, client.Merge)).To(Succeed())
	m := outageManager(t, g, kubeconfig, append(appArgs(t.TempDir()), "--app-retry-base="+outageAppRetryBase.String())...)
	g.Expect(host.Client.Create(ctx, f.app())).To(Succeed())
	expectAppConverged(ctx, g, f, m.Exited)

	const down = 10 * time.Second
	n, took := outage(ctx, proxy, Down, down, func() {
		setImage(ctx, g, f, "ghcr.io/example/web:3.0.0")
		waitAppNotReady(ctx, g, f)
	})
	// client-go retries a GET whose connection was reset once a second (an artificial
	// Retry-After: 1, at most 10 times) inside a pass; the passes retry on the app's backoff.
	// The vCluster's Kustomization watch (controllers/app tenantwatch.go) is a second client:
	// its reflector lists again on its own backoff, and each LIST is such a GET.
	resetRetries := int64(math.Ceil(took.Seconds() / clientGoResetRetry.Seconds()))
	bound := resetRetries + attemptsWithin(took, outageAppRetryBase)*connsPerPass +
		resetRetries + attemptsWithin(took, reflectorBackoff)*connsPerPass
	t.Logf("tenant API server down %v: %d connections (bound %d: the pass and the Kustomization watch, each with client-go's GET retry every %v; passes every %v doubling, the watch every %v doubling, %d per try)",
		took.Round(time.Millisecond), n, bound, clientGoResetRetry, outageAppRetryBase, reflectorBackoff, connsPerPass)
	g.Expect(n).To(BeNumerically(">=", 1), "the app tried the vCluster while it was down (the count can fail)")
	g.Expect(n).To(BeNumerically("<=", bound), "no hot loop against the tenant API server while it is down")
	a := expectAppConverged(ctx, g, f, m.Exited)
	g.Expect(a.Spec.App.Image).To(Equal("ghcr.io/example/web:3.0.0"))
	deleteApp(ctx, g, f, m.Exited)
}

// TestControllerAPIHanging: the ioFog Controller API accepts connections and never answers
// while a ControlPlane installs. Each call ends at the Controller client's timeout
// (iofog.DefaultTimeout); the pass fails and is retried; nothing piles up. Once the Controller
// answers again the install finishes and each CA is imported once.
func TestControllerAPIHanging(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(3 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	ns := "outage-controller"
	cp := sampleControlPlane(g, ns)
	password := "hang-bootstrap"
	fk := fake.NewServer(fake.WithCredentials(cp.Spec.Auth.Bootstrap.Username, password))
	defer fk.Close()
	fu, err := url.Parse(fk.URL())
	g.Expect(err).NotTo(HaveOccurred())
	proxy, err := StartFaultProxy(fu.Host)
	g.Expect(err).NotTo(HaveOccurred())
	defer proxy.Close()
	proxy.Set(Hang)
	createControlPlane(ctx, g, host.Client, cp, password)
	m := outageManager(t, g, kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--enable-app-controller=false", "--controller-endpoint-template="+proxy.Addr())

	// The hang starts with the first call the install makes to the Controller.
	g.Eventually(proxy.Accepted, 2*time.Minute).Should(BeNumerically(">=", 1), "the install reaches the Controller API")
	const hang = 25 * time.Second
	n, took := outage(ctx, proxy, Hang, hang, nil)
	// Each pass waits for one call at a time; a call ends after the client timeout.
	bound := (int64(took/iofog.DefaultTimeout) + 1) * connsPerPass
	t.Logf("Controller API hanging %v: %d connections (bound %d: one call per %v timeout)", took.Round(time.Millisecond), n, bound, iofog.DefaultTimeout)
	g.Expect(n).To(BeNumerically(">=", 1), "the install kept trying while the Controller hung (the count can fail)")
	g.Expect(n).To(BeNumerically("<=", bound), "no pile-up of calls against a hanging Controller")
	g.Expect(fk.Requests()).To(BeEmpty(), "no request got through the hang")

	tr := &trial{t: t, g: g, ctx: ctx, ns: ns, fake: fk, mgr: m, secret: watchKeySecrets(ctx, ns, cp.Spec.Auth.Bootstrap.PasswordSecretRef.Name)}
	defer tr.secret.stop()
	tr.expectReady()
	tr.expectSingleCAImports()
}

// TestHostAPIServerRestart: the host API server (and its etcd) stops in the middle of a
// ControlPlane install and starts again on the same address with the same data. The manager's
// kubeconfig names a proxy in front of the API server, which counts its connection attempts
// while the server is down.
func TestHostAPIServerRestart(t *testing.T) {
	ctx := t.Context()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(3 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	// A host of its own, so the restart touches no other test.
	h := testenv.StartForTest(t, testenv.Options{StateDir: t.TempDir()})
	cloud, err := sandbox.StartLocalCloud("restart-host", h.Config, ctrl.Log.WithName("local-cloud"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = cloud.Stop() }()
	u, err := url.Parse(h.Config.Host)
	g.Expect(err).NotTo(HaveOccurred())
	proxy, err := StartFaultProxy(u.Host)
	g.Expect(err).NotTo(HaveOccurred())
	defer proxy.Close()
	kc, err := h.Kubeconfig("restart-operator")
	g.Expect(err).NotTo(HaveOccurred())
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kcPath, kubeconfigVia(g, kc, proxy.Addr()), 0o600)).To(Succeed())

	ns := "outage-host"
	cp := sampleControlPlane(g, ns)
	password := "restart-bootstrap"
	fk := fake.NewServer(fake.WithCredentials(cp.Spec.Auth.Bootstrap.Username, password))
	defer fk.Close()
	fu, err := url.Parse(fk.URL())
	g.Expect(err).NotTo(HaveOccurred())
	createControlPlane(ctx, g, h.Client, cp, password)
	m := outageManager(t, g, kcPath, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--enable-app-controller=false", "--controller-endpoint-template="+fu.Host)

	// Mid-reconcile: the install has begun talking to the Controller.
	g.Eventually(func() int { return len(fk.Requests()) }).Should(BeNumerically(">", 0))
	const down = 8 * time.Second
	stopping := time.Now()
	g.Expect(h.StopAPIServer()).To(Succeed())
	t.Logf("host API server stopped in %v", time.Since(stopping).Round(time.Millisecond))
	begin := time.Now()
	before := proxy.Accepted()
	select {
	case <-time.After(down): // the outage's length
	case <-ctx.Done():
	}
	n, took := proxy.Accepted()-before, time.Since(begin)
	g.Expect(h.StartAPIServer()).To(Succeed())
	// While down: every informer's reflector retries on its backoff, the ControlPlane pass on
	// the default rate limiter, the event sink and the status patch once per pass.
	const informers = 20
	bound := informers*attemptsWithin(took, reflectorBackoff) + attemptsWithin(took, cpRetryBase)*connsPerPass
	t.Logf("host API server down %v: %d connections, %d found it refusing (bound %d: %d informers on %v backoff, the pass on %v doubling)",
		took.Round(time.Millisecond), n, proxy.Unreachable(), bound, informers, reflectorBackoff, cpRetryBase)
	g.Expect(n).To(BeNumerically(">=", 1), "the manager tried the API server while it was down (the count can fail)")
	g.Expect(n).To(BeNumerically("<=", bound), "no hot loop against the restarting API server")

	g.Eventually(func(g Gomega) {
		g.Expect(m.Exited()).To(Succeed())
		got := &datasancev3.ControlPlane{}
		g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(cp), got)).To(Succeed())
		c := apimeta.FindStatusCondition(got.Status.Conditions, datasancev3.ConditionReady)
		g.Expect(c).NotTo(BeNil(), "conditions: %+v", got.Status.Conditions)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "conditions: %+v", got.Status.Conditions)
		g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
	}).Should(Succeed(), "the ControlPlane is ready after the restart (manager log %s)", m.Log)
	tr := &trial{t: t, g: g, ctx: ctx, ns: ns, fake: fk}
	tr.expectSingleCAImports()
}

// kubeconfigVia is kc with every cluster's server replaced by https://<addr>.
func kubeconfigVia(g Gomega, kc []byte, addr string) []byte {
	cfg, err := clientcmd.Load(kc)
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range cfg.Clusters {
		c.Server = "https://" + addr
	}
	out, err := clientcmd.Write(*cfg)
	g.Expect(err).NotTo(HaveOccurred())
	return out
}

func createControlPlane(ctx context.Context, g Gomega, c client.Client, cp *datasancev3.ControlPlane, password string) {
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cp.Namespace}})).To(Succeed())
	createCredentialSecrets(ctx, g, c, cp, password)
	g.Expect(c.Create(ctx, cp)).To(Succeed())
}

func setImage(ctx context.Context, g Gomega, f *appFixture, image string) {
	g.Eventually(func() error {
		a := &kubeoperav1alpha1.KubeOperaApp{}
		if err := host.Client.Get(ctx, f.key(), a); err != nil {
			return err
		}
		a.Spec.App.Image = image
		return host.Client.Update(ctx, a)
	}).Should(Succeed())
}

// waitAppNotReady waits for the app's Ready condition of its current generation to be False
// (the pass failed against the missing dependency).
func waitAppNotReady(ctx context.Context, g Gomega, f *appFixture) {
	g.Eventually(func(g Gomega) {
		a := &kubeoperav1alpha1.KubeOperaApp{}
		g.Expect(host.Client.Get(ctx, f.key(), a)).To(Succeed())
		c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(a.Generation))
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), "Ready: %+v", c)
	}).Should(Succeed(), "%s: Ready=False", f.ns)
}

func deleteApp(ctx context.Context, g Gomega, f *appFixture, exited func() error) {
	a := &kubeoperav1alpha1.KubeOperaApp{}
	g.Expect(host.Client.Get(ctx, f.key(), a)).To(Succeed())
	g.Expect(host.Client.Delete(ctx, a)).To(Succeed())
	expectAppGone(ctx, g, f, a, exited)
}
