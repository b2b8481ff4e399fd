package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/test/testbed"
)

// TestFluxEndToEnd: a KubeOperaApp becomes a Deployment, Service and Ingress in the tenant API
// server through Git and the real Flux controllers; once Flux applied them the app waits for the
// Ingress's address and certificate, then reports Synced with the pushed commit; a spec change
// reaches the tenant; deleting the app prunes the objects and removes its folder from Git.
func TestFluxEndToEnd(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	start := time.Now()
	e := startEnv(t, g, apptest.FluxOptions{})
	host, tenant, gitServer, flux := e.host, e.tenant, e.git, e.flux
	// The tenant has no ingress controller: the stand-in below writes the address one would.
	standInCtx, stopStandIn := context.WithCancel(ctx)
	t.Cleanup(stopStandIn)

	// A CloudSpace on the host: a Ready Tenant with its exported kubeconfig, Git credentials
	// and a registry pull Secret.
	ns := e.cloudSpace(g, "tenant-a", "cs-e2e")
	g.Expect(host.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pull"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
	})).To(Succeed())

	webApp := e.app(ns, "web", "tenant-a", "cs-e2e", "tenant-a-apps", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = "shop"
		a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "pull"}}
		a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "letsencrypt"}
	})
	created := time.Now()
	g.Expect(host.Client.Create(ctx, webApp)).To(Succeed())

	// Flux applies what was pushed: the objects exist in the tenant.
	deploy := &appsv1.Deployment{}
	g.Eventually(func() error {
		return tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, deploy)
	}).Should(Succeed())
	t.Logf("create → Deployment in tenant: %s", time.Since(created).Round(time.Millisecond))
	g.Expect(deploy.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/example/web:1.0.0"))
	g.Expect(deploy.Spec.Template.Spec.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: "pull"}}))
	g.Expect(deploy.Labels).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/name", ns+"-web"))
	g.Expect(tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &corev1.Service{})).To(Succeed())
	ingress := &networkingv1.Ingress{}
	g.Eventually(func() error {
		return tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, ingress)
	}).Should(Succeed())
	g.Expect(ingress.Annotations).To(HaveKeyWithValue("cert-manager.io/cluster-issuer", "letsencrypt"))
	g.Expect(tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "pull"}, &corev1.Secret{})).To(Succeed())

	// Flux applied the commit and its health checks passed, but no ingress controller serves
	// the Ingress yet: the app is not reachable at status.url, so it is not Synced.
	waiting := waitSyncedReason(g, host, ns, "web", kubeoperav1alpha1.ReasonIngressAddressPending)
	g.Expect(waiting.Status.AppliedRevision).To(Equal("main@sha1:" + waiting.Status.Commit))
	g.Expect(waiting.Status.URL).To(Equal("https://web.example.com"))
	// cert-manager's ingress-shim creates the Certificate of the Ingress's TLS Secret (cert-manager
	// does not run here: the test writes what it would), and an ingress controller admits the
	// Ingress (the stand-in writes the status.loadBalancer an ingress controller writes).
	cert := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
		"metadata": map[string]any{"namespace": "shop", "name": ingress.Spec.TLS[0].SecretName},
		"spec": map[string]any{
			"secretName": ingress.Spec.TLS[0].SecretName, "dnsNames": []any{"web.example.com"},
			"issuerRef": map[string]any{"name": "letsencrypt", "kind": "ClusterIssuer", "group": "cert-manager.io"},
		},
	}}
	g.Expect(tenant.Client.Create(ctx, cert)).To(Succeed())
	setCertificateReady(ctx, g, tenant.Client, cert, metav1.ConditionFalse, "DoesNotExist", "Issuing certificate as Secret does not exist")
	go standInIngressController(standInCtx, tenant.Client, "203.0.113.10")
	waitSyncedReason(g, host, ns, "web", kubeoperav1alpha1.ReasonCertificateNotReady)
	setCertificateReady(ctx, g, tenant.Client, cert, metav1.ConditionTrue, "Ready", "Certificate is up to date and has not expired")

	// The app reports Synced with the pushed commit.
	synced := waitSynced(g, host, ns, "web")
	head, err := gitServer.Head("tenant-a-apps", "main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(synced.Status.Commit).To(Equal(head))
	g.Expect(synced.Status.AppliedRevision).To(Equal("main@sha1:" + head))
	g.Expect(synced.Status.AvailableReplicas).To(Equal(int32(1)))
	// The replica is a pod that runs in the tenant cluster.
	pods := &corev1.PodList{}
	g.Expect(tenant.Client.List(ctx, pods, client.InNamespace("shop"), client.MatchingLabels{"app.kubernetes.io/name": "web"})).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
	t.Logf("create → Synced: %s", time.Since(created).Round(time.Millisecond))

	// A broken app (its image cannot be pulled: kwok plays ImagePullBackOff) is applied but never
	// Synced: Flux's health check fails, and the operator's part is still done (Ready).
	broken := e.app(ns, "broken", "tenant-a", "cs-e2e", "tenant-a-apps", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = "shop"
		a.Spec.App.Image = testbed.FailImage(testbed.FailImagePull)
	})
	g.Expect(host.Client.Create(ctx, broken)).To(Succeed())
	g.Eventually(func(g Gomega) {
		a := &kubeoperav1alpha1.KubeOperaApp{}
		g.Expect(host.Client.Get(ctx, client.ObjectKeyFromObject(broken), a)).To(Succeed())
		ready := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
		c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(kubeoperav1alpha1.ReasonKustomizationNotReady), c.Message)
		g.Expect(c.Message).To(ContainSubstring("HealthCheckFailed"))
		g.Expect(a.Status.AvailableReplicas).To(BeZero())
	}).Should(Succeed())
	g.Expect(tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "broken"}, &appsv1.Deployment{})).To(Succeed(), "the broken app was applied")
	g.Expect(host.Client.Delete(ctx, broken)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(host.Client.Get(ctx, client.ObjectKeyFromObject(broken), &kubeoperav1alpha1.KubeOperaApp{}))
	}).Should(BeTrue(), "the broken app is stuck in deletion")

	// A spec change reaches the tenant.
	changed := time.Now()
	g.Eventually(func() error {
		a := &kubeoperav1alpha1.KubeOperaApp{}
		if err := host.Client.Get(ctx, client.ObjectKeyFromObject(webApp), a); err != nil {
			return err
		}
		a.Spec.App.Image = "ghcr.io/example/web:2.0.0"
		a.Spec.App.Replicas = ptr.To[int32](3)
		return host.Client.Update(ctx, a)
	}).Should(Succeed())
	g.Eventually(func() (string, error) {
		err := tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, deploy)
		return deploy.Spec.Template.Spec.Containers[0].Image, err
	}).Should(Equal("ghcr.io/example/web:2.0.0"))
	g.Expect(*deploy.Spec.Replicas).To(Equal(int32(3)))
	resynced := waitSynced(g, host, ns, "web")
	g.Expect(resynced.Status.Commit).NotTo(Equal(synced.Status.Commit))
	head, err = gitServer.Head("tenant-a-apps", "main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resynced.Status.Commit).To(Equal(head))
	g.Expect(resynced.Status.AvailableReplicas).To(Equal(int32(3)))
	t.Logf("spec change → Synced in tenant: %s", time.Since(changed).Round(time.Millisecond))

	// Deleting the app prunes the objects and removes the folder from Git.
	deleted := time.Now()
	g.Expect(host.Client.Delete(ctx, webApp)).To(Succeed())
	g.Eventually(func() bool {
		err := host.Client.Get(ctx, client.ObjectKeyFromObject(webApp), &kubeoperav1alpha1.KubeOperaApp{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue(), "the app is stuck in deletion")
	t.Logf("delete → app gone: %s", time.Since(deleted).Round(time.Millisecond))
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.Ingress{}} {
		err := tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T not pruned: %v", obj, err)
	}
	// The app's pods stop: the garbage collector removes its ReplicaSet and they go.
	g.Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(tenant.Client.List(ctx, pods, client.InNamespace("shop"), client.MatchingLabels{"app.kubernetes.io/name": "web"})).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}).Should(Succeed(), "the deleted app's pods still run")
	files, err := gitServer.Files("tenant-a-apps", "main", "apps/"+ns+"/web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(BeEmpty())
	commits, err := gitServer.Commits("tenant-a-apps", "main")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commits[0].Message).To(HavePrefix("kubeopera: delete " + ns + "/web"))
	g.Expect(flux.Exited()).To(Succeed())
	t.Logf("whole test: %s", time.Since(start).Round(time.Millisecond))
}

// runOperator runs the App Controller against the host, with a short Synced poll so the test
// does not wait for the production interval.
func runOperator(ctx context.Context, t *testing.T, host *apptest.Cluster, opts ...func(*app.Options)) <-chan error {
	t.Helper()
	g := NewWithT(t)
	mgr, err := ctrl.NewManager(host.MustManagerConfig(t, "e2e-manager"), ctrl.Options{ // the bundle's RBAC, AllNamespaces
		Scheme:                 apptest.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Each test runs an operator of its own, in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	o := app.Options{
		GitCacheDir:        t.TempDir(),
		SyncPollInterval:   500 * time.Millisecond,
		DeletePollInterval: 500 * time.Millisecond,
		RetryBase:          time.Second,
		RetryMax:           5 * time.Second,
		// The test Git server is plain HTTP on loopback, and it and the vCluster's API server
		// listen on loopback, which the default allow-lists refuse.
		AllowInsecureGitHTTP:   true,
		AllowedGitHosts:        []string{"127.0.0.1"},
		AllowedVClusterServers: []string{"127.0.0.1"},
	}
	for _, opt := range opts {
		opt(&o)
	}
	r, err := app.NewReconciler(mgr, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.SetupWithManager(mgr)).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return done
}

// waitSyncedReason waits until the app's Synced condition is False with reason, for its current
// generation.
func waitSyncedReason(g Gomega, host *apptest.Cluster, ns, name, reason string) *kubeoperav1alpha1.KubeOperaApp {
	a := &kubeoperav1alpha1.KubeOperaApp{}
	g.Eventually(func(g Gomega) {
		g.Expect(host.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, a)).To(Succeed())
		c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse), c.Message)
		g.Expect(c.Reason).To(Equal(reason), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(a.Generation))
	}).Should(Succeed())
	return a
}

// setCertificateReady writes the Ready condition cert-manager writes on a Certificate.
func setCertificateReady(ctx context.Context, g Gomega, c client.Client, cert *unstructured.Unstructured, status metav1.ConditionStatus, reason, message string) {
	g.Eventually(func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cert), cert); err != nil {
			return err
		}
		cond := map[string]any{"type": "Ready", "status": string(status), "reason": reason, "message": message,
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": cert.GetGeneration()}
		if err := unstructured.SetNestedSlice(cert.Object, []any{cond}, "status", "conditions"); err != nil {
			return err
		}
		return c.Status().Update(ctx, cert)
	}).Should(Succeed())
}

// standInIngressController writes, for every Ingress of the tenant API server, the status an
// ingress controller writes once it serves it (vcluster syncs it back from the host's Ingress):
// a load-balancer address. It runs until ctx ends.
func standInIngressController(ctx context.Context, c client.Client, ip string) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list := &networkingv1.IngressList{}
		if err := c.List(ctx, list); err != nil {
			continue
		}
		for i := range list.Items {
			ing := &list.Items[i]
			if len(ing.Status.LoadBalancer.Ingress) > 0 {
				continue
			}
			ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: ip}}
			_ = c.Status().Update(ctx, ing) // a conflict is retried on the next tick
		}
	}
}

func waitSynced(g Gomega, host *apptest.Cluster, ns, name string) *kubeoperav1alpha1.KubeOperaApp {
	a := &kubeoperav1alpha1.KubeOperaApp{}
	g.Eventually(func(g Gomega) {
		g.Expect(host.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, a)).To(Succeed())
		g.Expect(a.Status.ObservedGeneration).To(Equal(a.Generation))
		for _, condType := range []string{kubeoperav1alpha1.ConditionReady, kubeoperav1alpha1.ConditionSynced} {
			c := apimeta.FindStatusCondition(a.Status.Conditions, condType)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s %s", condType, c.Reason, c.Message)
			g.Expect(c.ObservedGeneration).To(Equal(a.Generation))
		}
	}).Should(Succeed())
	return a
}

func skipOrFail(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if apptest.ExitCode(err) == 0 {
		t.Skip(err)
	}
	t.Fatal(err)
}

func dumpLogs(t *testing.T, dir string) {
	for _, name := range []string{"source-controller.log", "kustomize-controller.log"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		t.Logf("--- last lines of %s ---\n%s", name, strings.Join(lines, "\n"))
	}
}
