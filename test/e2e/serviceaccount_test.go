package e2e

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// Objects outside what an app's ServiceAccount may apply, committed by someone else to the
// repository: a Secret in the app namespace, a Deployment in another namespace.
const (
	probeSecret = `apiVersion: v1
kind: Secret
metadata:
  name: probe
  namespace: shop
stringData:
  token: not-for-flux
`
	probeElsewhere = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: probe
  namespace: default
spec:
  selector:
    matchLabels: {app: probe}
  template:
    metadata:
      labels: {app: probe}
    spec:
      containers:
      - name: probe
        image: ghcr.io/example/probe:1.0.0
`
)

// TestFluxAppliesAsTheAppsServiceAccount: kustomize-controller runs with Flux's multi-tenancy
// lockdown (--no-cross-namespace-refs, --default-service-account=default, so a Kustomization
// naming no ServiceAccount has no rights). The app still syncs: its Kustomization applies, and
// health-checks, as the app's ServiceAccount. That ServiceAccount may write nothing else: a
// Kustomization of it refuses a Secret in the app namespace and a Deployment in another
// namespace (Forbidden), and one naming no ServiceAccount cannot apply at all (what the app's
// Kustomization did before it named one). Deleting the app prunes as the ServiceAccount, and
// only then removes the ServiceAccount, Role and RoleBinding.
func TestFluxAppliesAsTheAppsServiceAccount(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(90 * time.Second)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	e := startEnv(t, g, apptest.FluxOptions{KustomizeControllerArgs: apptest.LockdownArgs})
	standInCtx, stopStandIn := context.WithCancel(ctx)
	t.Cleanup(stopStandIn)
	// The app's Ingress is admitted by an ingress controller (the stand-in writes its status).
	go standInIngressController(standInCtx, e.tenant.Client, "203.0.113.10")

	const repo = "locked-apps"
	for file, content := range map[string]string{"probe/secret/secret.yaml": probeSecret, "probe/elsewhere/deployment.yaml": probeElsewhere} {
		_, err := e.git.PushOutsideCommit(repo, "main", file, content)
		g.Expect(err).NotTo(HaveOccurred())
	}
	ns := e.cloudSpace(g, "tenant-a", "cs-sa")
	app := e.app(ns, "web", "tenant-a", "cs-sa", repo, func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = "shop"
		a.Spec.App.Ports = []kubeoperav1alpha1.AppPort{{Name: "http", ContainerPort: 8080, ServicePort: 80}}
		a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "web.example.com"}
	})
	g.Expect(e.host.Client.Create(ctx, app)).To(Succeed())
	synced := waitSynced(g, e.host, ns, "web")
	g.Expect(synced.Status.AvailableReplicas).To(Equal(int32(1)))
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		g.Expect(e.tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, obj)).To(Succeed())
	}
	g.Eventually(func() error {
		return e.tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &networkingv1.Ingress{})
	}).Should(Succeed())
	sa := render.FluxServiceAccountName(app)
	ks := &kustomizev1.Kustomization{}
	g.Expect(e.tenant.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: render.FluxName(app)}, ks)).To(Succeed())
	g.Expect(ks.Spec.ServiceAccountName).To(Equal(sa))

	// What the ServiceAccount may not apply, and what no ServiceAccount may apply.
	g.Expect(e.tenant.Client.Create(ctx, &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "probe"},
		Spec: sourcev1.GitRepositorySpec{
			URL: app.Spec.Git.URL, Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
			SecretRef: &meta.LocalObjectReference{Name: render.GitSecretName(app)},
		},
	})).To(Succeed())
	probes := []struct {
		name, path, serviceAccount, refused string
	}{
		{"probe-secret", "./probe/secret", sa, `secrets "probe" is forbidden: User "system:serviceaccount:flux-system:` + sa + `"`},
		{"probe-elsewhere", "./probe/elsewhere", sa, `deployments.apps "probe" is forbidden: User "system:serviceaccount:flux-system:` + sa + `"`},
		{"probe-unnamed", "./probe/elsewhere", "", `User "system:serviceaccount:flux-system:default"`},
	}
	for _, p := range probes {
		g.Expect(e.tenant.Client.Create(ctx, &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: p.name},
			Spec: kustomizev1.KustomizationSpec{
				Interval: metav1.Duration{Duration: time.Hour}, Path: p.path, Prune: true,
				ServiceAccountName: p.serviceAccount,
				SourceRef:          kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "probe"},
			},
		})).To(Succeed())
	}
	for _, p := range probes {
		g.Eventually(func(g Gomega) {
			k := &kustomizev1.Kustomization{}
			g.Expect(e.tenant.Client.Get(ctx, client.ObjectKey{Namespace: "flux-system", Name: p.name}, k)).To(Succeed())
			ready := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse), ready.Message)
			g.Expect(ready.Message).To(ContainSubstring(p.refused))
		}).Should(Succeed(), p.name)
	}
	g.Expect(apierrors.IsNotFound(e.tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "probe"}, &corev1.Secret{}))).To(BeTrue())
	g.Expect(apierrors.IsNotFound(e.tenant.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "probe"}, &appsv1.Deployment{}))).To(BeTrue())

	// Deletion: Flux prunes as the ServiceAccount, then the operator removes it.
	g.Expect(e.host.Client.Delete(ctx, app)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.host.Client.Get(ctx, client.ObjectKeyFromObject(app), &kubeoperav1alpha1.KubeOperaApp{}))
	}).Should(BeTrue(), "the app is stuck in deletion")
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.Ingress{}} {
		err := e.tenant.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T not pruned: %v", obj, err)
	}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: sa}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: sa}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: sa}},
	} {
		err := e.tenant.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T left behind: %v", obj, err)
	}
	g.Expect(e.flux.Exited()).To(Succeed())
}
