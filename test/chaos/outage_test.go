package chaos

import (
	"context"
	"fmt"
	"math"
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
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/sandbox"
	"github.com/kubeopera/kubeopera-operator/test/testbed"
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
		if report := testenv.RaceReport(m.Log); report != "" {
			t.Errorf("the manager's race detector reported:\n%s", report)
		}
		if t.Failed() {
			t.Logf("manager log (tail):\n%s", m.TailLog(12<<10))
		}
	})
	return m
}

// proxyOutage is the outage of the dependency behind p: the proxy in mode while it lasts, its
// accepted connections counted.
func proxyOutage(p *FaultProxy, mode Mode) testfixture.Outage {
	return testfixture.Outage{
		Down:     func() error { p.Set(mode); return nil },
		Up:       func() error { p.Set(Up); return nil },
		Counters: []func() int64{p.Accepted},
	}
}

// startOutage is the start every outage test shares: its context, a Gomega whose waits last up
// to timeout, and a fault proxy in front of upstream (a URL or host:port), closed at the end.
func startOutage(t *testing.T, timeout time.Duration, upstream string) (context.Context, Gomega, *FaultProxy) {
	t.Helper()
	g := newTrialGomega(t, timeout, 100*time.Millisecond)
	proxy, err := StartFaultProxy(hostPort(upstream))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(proxy.Close)
	return t.Context(), g, proxy
}

// expectNoHotLoop logs and checks the connections n that the faulted dependency (what) accepted
// during the window w it was down (n is w.Counts[0], the only counter of these outages): at
// least one, so the count can fail, and no more than bound, which how explains.
func expectNoHotLoop(t *testing.T, g Gomega, what string, w testfixture.Window, bound int64, how string) {
	t.Helper()
	n, took := w.Counts[0], w.Took
	t.Logf("%s down %v: %d connections (bound %d: %s)", what, took.Round(time.Millisecond), n, bound, how)
	g.Expect(n).To(BeNumerically(">=", 1), "the manager tried %s while it was down (the count can fail)", what)
	g.Expect(n).To(BeNumerically("<=", bound), "no hot loop against %s while it is down", what)
}

// appOutage is an outage of a dependency of a placed app, the shape of TestGitServerDownAndBack
// and TestTenantAPIServerDownAndBack: the app converges; the dependency, behind a fault proxy,
// is Down for 10 s while an image change waits; connections while down stay within bound; the
// app then converges to the change and is deleted.
type appOutage struct {
	// what names the dependency in the log and the failure messages.
	what string
	// ns is the app's namespace and repository.
	ns string
	// upstream is the dependency's address, which the proxy fronts.
	upstream string
	// gitURL is the app's Git URL, given the proxy's address.
	gitURL func(proxy string) string
	// prepare, if set, points the app's fixture at the proxy before the manager starts.
	prepare func(ctx context.Context, g Gomega, proxy string)
	// image is the changed image that waits during the outage.
	image string
	// bound is the most connections the dependency may accept in took, and how it is made.
	bound func(took time.Duration) (int64, string)
}

func runAppOutage(t *testing.T, o appOutage) {
	t.Helper()
	ctx, g, proxy := startOutage(t, 2*time.Minute, o.upstream)
	f := newAppFixture(ctx, g, o.ns, o.ns, o.gitURL(proxy.Addr()))
	if o.prepare != nil {
		o.prepare(ctx, g, proxy.Addr())
	}
	m := outageManager(t, g, kubeconfig, append(appArgs(t.TempDir()), "--app-retry-base="+outageAppRetryBase.String())...)
	g.Expect(host.Client.Create(ctx, f.app())).To(Succeed())
	expectAppConverged(ctx, g, f, m.Exited)

	const down = 10 * time.Second
	w, err := proxyOutage(proxy, Down).Hold(ctx, down, func() {
		setImage(ctx, g, f, o.image)
		waitAppNotReady(ctx, g, f)
	})
	g.Expect(err).NotTo(HaveOccurred())
	bound, how := o.bound(w.Took)
	expectNoHotLoop(t, g, o.what, w, bound, how)
	a := expectAppConverged(ctx, g, f, m.Exited)
	g.Expect(a.Spec.App.Image).To(Equal(o.image))
	deleteApp(ctx, g, f, m.Exited)
}

// TestGitServerDownAndBack: the apps' Git server goes away while an app change waits to be
// pushed, and comes back. While it is down the app retries on its backoff only (counted at the
// proxy in front of the Git server); once it is back the change is pushed and synced.
func TestGitServerDownAndBack(t *testing.T) {
	const ns = "outage-git"
	runAppOutage(t, appOutage{
		what: "the Git server", ns: ns, upstream: gitServer.HTTPAddress(),
		gitURL: func(proxy string) string { return "http://" + proxy + "/" + ns + ".git" },
		image:  "ghcr.io/example/web:2.0.0",
		bound: func(took time.Duration) (int64, string) {
			return attemptsWithin(took, outageAppRetryBase) * connsPerPass,
				fmt.Sprintf("retries every %v doubling, %d per pass", outageAppRetryBase, connsPerPass)
		},
	})
}

// TestTenantAPIServerDownAndBack: the app's vCluster API server goes away while an app change
// waits to be placed, and comes back. The kubeconfig the Tenant exports names the proxy in front
// of the tenant API server.
func TestTenantAPIServerDownAndBack(t *testing.T) {
	const ns = "outage-tenant"
	runAppOutage(t, appOutage{
		what: "the tenant API server", ns: ns, upstream: tenant.Config.Host,
		gitURL: func(string) string { return gitServer.URL(ns) },
		// The Tenant's exported kubeconfig names the proxy.
		prepare: func(ctx context.Context, g Gomega, proxy string) {
			g.Expect(host.Client.Patch(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vc-" + appTenant},
				Data:       map[string][]byte{"config": kubeconfigVia(g, tenantKubeconfig, proxy)},
			}, client.Merge)).To(Succeed())
		},
		image: "ghcr.io/example/web:3.0.0",
		// client-go retries a GET whose connection was reset once a second (an artificial
		// Retry-After: 1, at most 10 times) inside a pass; the passes retry on the app's backoff.
		// The vCluster's Kustomization watch (controllers/app tenantwatch.go) is a second client:
		// its reflector lists again on its own backoff, and each LIST is such a GET.
		bound: func(took time.Duration) (int64, string) {
			resetRetries := int64(math.Ceil(took.Seconds() / clientGoResetRetry.Seconds()))
			return resetRetries + attemptsWithin(took, outageAppRetryBase)*connsPerPass +
					resetRetries + attemptsWithin(took, reflectorBackoff)*connsPerPass,
				fmt.Sprintf("the pass and the Kustomization watch, each with client-go's GET retry every %v; passes every %v doubling, the watch every %v doubling, %d per try",
					clientGoResetRetry, outageAppRetryBase, reflectorBackoff, connsPerPass)
		},
	})
}

// TestControllerAPIHanging: the ioFog Controller API accepts connections and never answers
// while a ControlPlane installs. Each call ends at the Controller client's timeout
// (iofog.DefaultTimeout); the pass fails and is retried; nothing piles up. Once the Controller
// answers again the install finishes and each CA is imported once.
func TestControllerAPIHanging(t *testing.T) {
	const ns = "outage-controller"
	password := "hang-bootstrap"
	cp, fk := sampleWithController(NewWithT(t), ns, password, host.Client)
	defer fk.Close()
	ctx, g, proxy := startOutage(t, 3*time.Minute, fk.URL())
	proxy.Set(Hang)
	createControlPlane(ctx, g, host.Client, cp, password)
	m := outageManager(t, g, kubeconfig, controlPlaneArgs(proxy.Addr())...)

	// The hang starts with the first call the install makes to the Controller.
	g.Eventually(proxy.Accepted, 2*time.Minute).Should(BeNumerically(">=", 1), "the install reaches the Controller API")
	const hang = 25 * time.Second
	w, err := proxyOutage(proxy, Hang).Hold(ctx, hang, nil)
	g.Expect(err).NotTo(HaveOccurred())
	// Each pass waits for one call at a time; a call ends after the client timeout.
	bound := (int64(w.Took/iofog.DefaultTimeout) + 1) * connsPerPass
	expectNoHotLoop(t, g, "the hanging Controller API", w, bound, fmt.Sprintf("one call per %v timeout, %d per pass", iofog.DefaultTimeout, connsPerPass))
	g.Expect(fk.Requests()).To(BeEmpty(), "no request got through the hang")

	tr := &trial{t: t, g: g, ctx: ctx, c: host.Client, ns: ns, fake: fk, mgr: m, secret: watchKeySecrets(ctx, ns, cp.Spec.Auth.Bootstrap.PasswordSecretRef.Name)}
	defer tr.secret.stop()
	tr.expectReady()
	tr.expectSingleCAImports()
}

// TestHostAPIServerRestart: the host API server (and its etcd) stops in the middle of a
// ControlPlane install and starts again on the same address with the same data. The manager's
// kubeconfig names a proxy in front of the API server, which counts its connection attempts
// while the server is down.
func TestHostAPIServerRestart(t *testing.T) {
	// A host of its own, so the restart touches no other test.
	h := testbed.StartForTest(context.Background(), t, testbed.Options{API: testenv.Options{StateDir: t.TempDir()}})
	ctx, g, proxy := startOutage(t, 3*time.Minute, h.Config.Host)
	cloud, err := sandbox.StartLocalCloud("restart-host", h.Config, ctrl.Log.WithName("local-cloud"))
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = cloud.Stop() }()
	kc, err := h.Kubeconfig("restart-operator")
	g.Expect(err).NotTo(HaveOccurred())
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kcPath, kubeconfigVia(g, kc, proxy.Addr()), 0o600)).To(Succeed())

	ns := "outage-host"
	password := "restart-bootstrap"
	cp, fk := sampleWithController(g, ns, password, h.Client)
	defer fk.Close()
	createControlPlane(ctx, g, h.Client, cp, password)
	m := outageManager(t, g, kcPath, controlPlaneArgs(fk.URL())...)

	// Mid-reconcile: the install has begun talking to the Controller.
	g.Eventually(func() int { return len(fk.Requests()) }).Should(BeNumerically(">", 0))
	const down = 8 * time.Second
	restart := testfixture.Outage{
		Down: func() error {
			stopping := time.Now()
			err := h.StopAPIServer()
			t.Logf("host API server stopped in %v", time.Since(stopping).Round(time.Millisecond))
			return err
		},
		Up:       h.StartAPIServer,
		Counters: []func() int64{proxy.Accepted},
	}
	w, err := restart.Hold(ctx, down, nil)
	g.Expect(err).NotTo(HaveOccurred())
	// While down: every informer's reflector retries on its backoff, the ControlPlane pass on
	// the default rate limiter, the event sink and the status patch once per pass.
	const informers = 20
	bound := informers*attemptsWithin(w.Took, reflectorBackoff) + attemptsWithin(w.Took, cpRetryBase)*connsPerPass
	expectNoHotLoop(t, g, "the host API server", w, bound, fmt.Sprintf("%d informers on %v backoff, the pass on %v doubling; %d found it refusing",
		informers, reflectorBackoff, cpRetryBase, proxy.Unreachable()))

	tr := &trial{t: t, g: g, ctx: ctx, c: h.Client, ns: ns, fake: fk, mgr: m}
	tr.waitReady()
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

// createControlPlane creates the ControlPlane with its namespace and credential Secrets.
func createControlPlane(ctx context.Context, g Gomega, c client.Client, cp *datasancev3.ControlPlane, password string) {
	createCredentials(ctx, g, c, cp, password)
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
