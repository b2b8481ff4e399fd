package sandbox_test

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/test/sandbox"
)

// TestSandbox starts the sandbox as `make run` does (sandbox.Start with the manager's default
// options), waits until the sample ControlPlane is ready with its router, NATS hub and CAs
// registered in the Controller double and the sample app is Synced with the commit on the Git
// server, then stops it and checks that no child process and no listener is left.
func TestSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the sandbox starts two API servers and the Flux controllers")
	}
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	log.SetOutput(io.Discard) // the Git server logs every request
	logger := logr.Discard()
	if os.Getenv("KUBEOPERA_TEST_LOG") != "" {
		logger = zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	}
	ctrl.SetLogger(logger)
	ctx := context.Background()

	baseProcs, err := descendants(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	baseListeners, err := ownListeners()
	g.Expect(err).NotTo(HaveOccurred())

	begin := time.Now()
	opts := controllers.DefaultOptions()
	opts.Apps.SyncPollInterval = sandbox.SyncPollInterval // as make run sets it
	sb, err := sandbox.Start(ctx, sandbox.Options{Dir: t.TempDir(), Manager: opts, Log: logger})
	// Missing tools (envtest binaries, Flux controllers, git) fail the test: only -short skips.
	g.Expect(err).NotTo(HaveOccurred())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = sb.Stop()
		}
	})
	t.Logf("sandbox started in %s", sb.Started.Round(time.Millisecond))
	endpoints := []string{sb.Host.Config.Host, sb.Tenant.Config.Host, sb.Controller.URL(), sb.Git.HTTPAddress()}

	running, err := descendants(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(running)).To(ContainElements("etcd", "etcd", "kube-apiserver", "kube-apiserver", "source-controller", "kustomize-controller",
		"kube-controller-manager", "kube-controller-manager", "kube-scheduler", "kube-scheduler", "kwok", "kwok"))

	host := sb.Host.Client
	// The sample ControlPlane: deploying → ready.
	cp := &datasancev3.ControlPlane{}
	cpKey := client.ObjectKey{Namespace: sandbox.Namespace, Name: "pot"}
	g.Eventually(func(g Gomega) {
		g.Expect(host.Get(ctx, cpKey, cp)).To(Succeed())
		ready := apimeta.FindStatusCondition(cp.Status.Conditions, datasancev3.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		g.Expect(cp.Status.ObservedGeneration).To(Equal(cp.Generation))
	}).Should(Succeed())
	t.Logf("start → ControlPlane ready: %s", time.Since(begin).Round(time.Millisecond))
	deploying := apimeta.FindStatusCondition(cp.Status.Conditions, datasancev3.ConditionDeploying)
	// deploying was True before ready: it is now False with reason Transitioned.
	g.Expect(deploying).NotTo(BeNil(), "the ControlPlane never went through deploying")
	g.Expect(deploying.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(deploying.Reason).To(Equal(datasancev3.ReasonTransitioned))
	for _, c := range []datasancev3.ComponentStatus{cp.Status.Controller.ComponentStatus, cp.Status.Router.ComponentStatus, cp.Status.Nats.ComponentStatus} {
		g.Expect(c.Ready).To(BeTrue(), "%s: %s", c.Reason, c.Message)
	}

	// What the ControlPlane registered is in the Controller double, at the local cloud's
	// loopback addresses.
	g.Expect(cp.Status.Router.Address).To(HavePrefix("127.0.100."))
	g.Expect(cp.Status.Nats.Address).To(HavePrefix("127.0.100."))
	g.Expect(cp.Status.Router.Address).NotTo(Equal(cp.Status.Nats.Address))
	router, ok := sb.Controller.Router()
	g.Expect(ok).To(BeTrue(), "no router registered")
	g.Expect(router.Host).To(Equal(cp.Status.Router.Address))
	hub, ok := sb.Controller.Hub()
	g.Expect(ok).To(BeTrue(), "no NATS hub registered")
	g.Expect(hub.Host).To(Equal(cp.Status.Nats.Address))
	cas := sb.Controller.ImportedCAs()
	g.Expect(cas).To(HaveLen(4))
	g.Expect(cas).To(ContainElements("router-site-ca", "default-router-local-ca"))
	for _, name := range cas {
		g.Expect(host.Get(ctx, client.ObjectKey{Namespace: sandbox.Namespace, Name: name}, &corev1.Secret{})).To(Succeed(), "CA %s imported without its Secret", name)
	}

	// The operands run: the test bed's controllers created their pods, the scheduler placed them
	// and kwok reports them Running and Ready (what `kubectl get pods -n demo` shows).
	g.Expect(runningPods(ctx, g, host, sandbox.Namespace)).To(ContainElements(
		HavePrefix("controller-"), HavePrefix("router-"), Equal("nats-0"), Equal("nats-1"), Equal("nats-2")))

	// The sample app: committed to the sandbox Git server, applied by Flux in the tenant, Synced.
	app := &kubeoperav1alpha1.KubeOperaApp{}
	appKey := client.ObjectKey{Namespace: sandbox.Namespace, Name: "web"}
	g.Eventually(func(g Gomega) {
		g.Expect(host.Get(ctx, appKey, app)).To(Succeed())
		c := apimeta.FindStatusCondition(app.Status.Conditions, kubeoperav1alpha1.ConditionSynced)
		g.Expect(c).NotTo(BeNil(), "the app's conditions: %+v", app.Status.Conditions)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(app.Generation))
	}).Should(Succeed())
	t.Logf("start → app Synced: %s", time.Since(begin).Round(time.Millisecond))
	head, err := sb.Git.Head("tenant-a-apps", "main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).NotTo(BeEmpty())
	g.Expect(app.Status.Commit).To(Equal(head))
	g.Expect(app.Status.AppliedRevision).To(Equal("main@sha1:" + head))
	g.Expect(app.Spec.Git.URL).To(Equal(sb.Git.URL("tenant-a-apps")))
	files, err := sb.Git.Files("tenant-a-apps", "main", app.Status.Path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).NotTo(BeEmpty())
	web := &appsv1.Deployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(sb.Tenant.Client.Get(ctx, client.ObjectKey{Namespace: "web", Name: "web"}, web)).To(Succeed())
		g.Expect(deploymentAvailable(web)).To(BeTrue(), "the app's Deployment is not available in the tenant")
	}).Should(Succeed())
	g.Expect(web.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/example/web:1.2.3"))
	// The app's pods run in the tenant cluster.
	g.Expect(runningPods(ctx, g, sb.Tenant.Client, "web")).To(ContainElement(HavePrefix("web-")))

	// The status view shows both goals and the last Events.
	v, err := sb.Snapshot(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	sandbox.Render(&out, v)
	view := out.String()
	t.Logf("status view:\n%s%s", sb.Header(), view)
	g.Expect(view).To(ContainSubstring("ControlPlane demo/pot: ready (Reconciled)"))
	g.Expect(view).To(ContainSubstring("KubeOperaApp demo/web: Synced=True"))
	g.Expect(view).To(ContainSubstring("commit " + head[:8] + " path " + app.Status.Path))
	g.Expect(v.Events).NotTo(BeEmpty())
	g.Expect(v.Simulated).NotTo(BeEmpty())
	g.Expect(sb.Header()).To(ContainSubstring(sandbox.Simulated + " ioFog Controller API"))

	// A ControlPlane whose Controller Service is a LoadBalancer is checked through that address
	// (docs/controlplane.md#controller-reconcile-steps step 6): the fake Controller answers there too, so it becomes ready.
	g.Expect(host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "edge"}})).To(Succeed())
	// The credential Secrets the sample references (bootstrap password, database password).
	copied := map[string]bool{}
	for _, r := range cp.Spec.CredentialRefs() {
		if copied[r.Ref.Name] {
			continue
		}
		copied[r.Ref.Name] = true
		src := &corev1.Secret{}
		g.Expect(host.Get(ctx, client.ObjectKey{Namespace: sandbox.Namespace, Name: r.Ref.Name}, src)).To(Succeed())
		g.Expect(host.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: src.Name}, Data: src.Data})).To(Succeed())
	}
	g.Expect(copied).To(HaveKey("controller-bootstrap"))
	edge := &datasancev3.ControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "edge"}, Spec: *cp.Spec.DeepCopy()}
	edge.Spec.Services.Controller = nil // LoadBalancer
	edge.Spec.Ingresses.Controller = nil
	edge.Spec.Nats.Enabled = ptr.To(false)
	g.Expect(host.Create(ctx, edge)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(host.Get(ctx, client.ObjectKeyFromObject(edge), edge)).To(Succeed())
		ready := apimeta.FindStatusCondition(edge.Status.Conditions, datasancev3.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
	}).Should(Succeed())
	g.Expect(edge.Status.Controller.PublicURL).To(MatchRegexp(`^http://127\.0\.100\.\d+:51121$`))
	lbStatus, err := http.Get(edge.Status.Controller.PublicURL + "/api/v3/status") //nolint:noctx // a loopback test request
	g.Expect(err).NotTo(HaveOccurred())
	_ = lbStatus.Body.Close()
	g.Expect(lbStatus.StatusCode).To(Equal(http.StatusOK))
	endpoints = append(endpoints, edge.Status.Controller.PublicURL)

	// Stop: no child process, no listener of this process, no endpoint left.
	g.Expect(sb.Stop()).To(Succeed())
	stopped = true
	left, err := descendants(os.Getpid())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names(left)).To(Equal(names(baseProcs)), "processes left after Stop")
	listeners, err := ownListeners()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(listeners).To(Equal(baseListeners), "listeners left after Stop")
	for _, e := range endpoints {
		addr := e
		if u, err := url.Parse(e); err == nil && u.Host != "" {
			addr = u.Host
		}
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = conn.Close()
		}
		g.Expect(err).To(HaveOccurred(), "%s still answers after Stop", e)
	}
	t.Logf("whole test: %s", time.Since(begin).Round(time.Millisecond))
}

// runningPods waits until the namespace has pods and every one of them is Running and Ready, and
// returns their names.
func runningPods(ctx context.Context, g Gomega, c client.Client, ns string) []string {
	var names []string
	g.Eventually(func(g Gomega) {
		list := &corev1.PodList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).NotTo(BeEmpty())
		names = names[:0]
		for _, p := range list.Items {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			g.Expect(podReady(&p)).To(BeTrue(), "pod %s is not ready", p.Name)
			names = append(names, p.Name)
		}
	}).Should(Succeed())
	return names
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue && strings.TrimSpace(c.Reason) != ""
		}
	}
	return false
}
