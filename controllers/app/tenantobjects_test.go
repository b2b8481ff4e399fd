package app_test

import (
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// TestTenantObjectsInTheVClusterAreLeftAlone: a tenant administrator created, in its vCluster,
// an object of a name the operator writes for an app (the pull Secret's copy, the copy of the
// Flux credentials, the GitRepository, the Kustomization's ServiceAccount, Role or RoleBinding,
// the Kustomization). The object carries no managed-by label, so it is the tenant's: the app
// reports VClusterObjectNotOwned on the step's condition and on Ready, with a Warning Event, and
// the object is never written — not while the app is refused, not when the app is deleted (its
// resourceVersion never changes). The app namespace the tenant created itself is used as it is.
func TestTenantObjectsInTheVClusterAreLeftAlone(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now().Add(-time.Minute))
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "pull"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example.com":{}}}`)},
	})
	tenantSecret := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"tenant.example.com":{}}}`)},
		}
	}
	const (
		tenantCond = kubeoperav1alpha1.ConditionTenantResolved
		fluxCond   = kubeoperav1alpha1.ConditionFluxConfigured
	)
	cases := []struct {
		name string
		// obj is the tenant's object, of the name the operator would write for a.
		obj       func(a *kubeoperav1alpha1.KubeOperaApp) client.Object
		condition string
		kind      string
	}{
		{name: "pull Secret", condition: tenantCond, kind: "Secret", obj: func(a *kubeoperav1alpha1.KubeOperaApp) client.Object {
			return tenantSecret(render.TargetNamespace(a), "pull")
		}},
		{name: "Flux Git Secret", condition: fluxCond, kind: "Secret", obj: func(a *kubeoperav1alpha1.KubeOperaApp) client.Object {
			return tenantSecret(render.FluxNamespace(a), render.GitSecretName(a))
		}},
		{name: "GitRepository", condition: fluxCond, kind: "GitRepository", obj: func(a *kubeoperav1alpha1.KubeOperaApp) client.Object {
			return &sourcev1.GitRepository{
				ObjectMeta: metav1.ObjectMeta{Namespace: render.FluxNamespace(a), Name: render.FluxName(a)},
				Spec: sourcev1.GitRepositorySpec{URL: "https://git.example.com/tenant/own.git",
					Interval: metav1.Duration{Duration: time.Hour}},
			}
		}},
		{name: "ServiceAccount", condition: fluxCond, kind: "ServiceAccount", obj: func(a *kubeoperav1alpha1.KubeOperaApp) client.Object {
			return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: render.FluxNamespace(a), Name: render.FluxServiceAccountName(a)}}
		}},
		{name: "Role", condition: fluxCond, kind: "Role", obj: func(a *kubeoperav1alpha1.KubeOperaApp) client.Object {
			return &rbacv1.Role{
				ObjectMeta: metav1.ObjectMeta{Namespace: render.TargetNamespace(a), Name: render.FluxServiceAccountName(a)},
				Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
			}
		}},
		{name: "RoleBinding", condition: fluxCond, kind: "RoleBinding", obj: func(a *kubeoperav1alpha1.KubeOperaApp) client.Object {
			return &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: render.TargetNamespace(a), Name: render.FluxServiceAccountName(a)},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant-role"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "tenant-admin"}},
			}
		}},
		{name: "Kustomization", condition: fluxCond, kind: "Kustomization", obj: func(a *kubeoperav1alpha1.KubeOperaApp) client.Object {
			return &kustomizev1.Kustomization{
				ObjectMeta: metav1.ObjectMeta{Namespace: render.FluxNamespace(a), Name: render.FluxName(a)},
				Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Hour}, Path: "./tenant", Prune: true,
					SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "tenant-source"}},
			}
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cf := *f
			cf.t, cf.g = t, g
			g.SetDefaultEventuallyTimeout(timeout)
			g.SetDefaultEventuallyPollingInterval(interval)
			name := fmt.Sprintf("own-%d", i)
			a := cf.newApp(name, "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
				a.Spec.TargetNamespace = name
				a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "pull"}}
			})
			// The tenant's namespaces and its object.
			for _, ns := range []string{render.TargetNamespace(a), render.FluxNamespace(a)} {
				err := vcluster.Client.Create(cf.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
				g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "create namespace %s: %v", ns, err)
			}
			own := tc.obj(a)
			g.Expect(vcluster.Client.Create(cf.ctx, own)).To(Succeed())
			key, rv := client.ObjectKeyFromObject(own), own.GetResourceVersion()
			t.Cleanup(func() { _ = vcluster.Client.Delete(cf.ctx, own) })
			unchanged := func(when string) {
				t.Helper()
				got := own.DeepCopyObject().(client.Object)
				g.Expect(vcluster.Client.Get(cf.ctx, key, got)).To(Succeed(), "the tenant's %s is gone %s", tc.kind, when)
				g.Expect(got.GetResourceVersion()).To(Equal(rv), "the tenant's %s was written %s", tc.kind, when)
			}

			cf.create(a)
			got := cf.waitCondition(name, tc.condition, metav1.ConditionFalse, kubeoperav1alpha1.ReasonVClusterObjectNotOwned)
			g.Expect(conditionMessage(got, tc.condition)).To(ContainSubstring(fmt.Sprintf("%s %s exists without the label", tc.kind, key)))
			cf.waitCondition(name, kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonVClusterObjectNotOwned)
			cf.waitEvent(name, corev1.EventTypeWarning, kubeoperav1alpha1.ReasonVClusterObjectNotOwned)
			// Retried with the backoff: the next passes find the same and write nothing to it.
			cf.waitMorePasses(name, 2)
			unchanged("while the app is refused")

			cf.deleteApp(name)
			cf.waitGone(name)
			unchanged("after the app's deletion")
		})
	}
}
