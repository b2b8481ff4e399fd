package app

import (
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// deletingPlacedApp is app web being deleted after it was placed in Tenant t1's vCluster and
// committed, with Git credentials that are gone (so the Git step is skipped and the test is about
// the vCluster only), annotated with annotations.
func deletingPlacedApp(annotations map[string]string) *kubeoperav1alpha1.KubeOperaApp {
	return testfixture.KubeOperaApp(
		testfixture.AppFinalizers(kubeoperav1alpha1.Finalizer), testfixture.AppDeleting(time.Now()), testfixture.AppAnnotations(annotations),
		testfixture.AppPlacedIn("ns", "t1"), testfixture.AppGitSecret("deleted-creds"),
		func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Status.Path, a.Status.Commit = "apps/ns/web", "0123456789abcdef0123456789abcdef01234567"
		})
}

// The finalizer exists so that no workload runs on without its KubeOperaApp: a deletion never
// takes "cannot look" for "nothing there". An app placed in a vCluster the operator cannot reach
// keeps its finalizer with DeleteFailed, and no vCluster client is even built where the
// allow-list forbids it: the Tenant API is not served any more, or the vCluster's server left the
// allow-list after the app was placed. The abandon annotation is the explicit way out. A Tenant
// being deleted still has its vCluster: the app is cleaned through it.
func TestDeleteNeverLeavesAPlacedWorkloadRunning(t *testing.T) {
	kubeconfig := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vc-t1"}, Data: map[string][]byte{"config": []byte(testKubeconfig)}}
	}
	abandon := map[string]string{kubeoperav1alpha1.AnnotationAbandonKustomization: "true"}
	cannotReach := map[string]func(tr *testReconciler){
		"the Tenant API is not served": func(tr *testReconciler) { tr.tenantAPI.watched.Store(false) },
		"the server left the allow-list": func(tr *testReconciler) {
			tr.Options.AllowedVClusterServers = []string{"*.vcluster.internal"}
		},
	}
	for name, breakIt := range cannotReach {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			tr := newTestReconciler(t, nil, deletingPlacedApp(nil), testfixture.Tenant(), kubeconfig())
			breakIt(tr)
			for range 2 {
				a, err := tr.reconcileErr(t)
				g.Expect(a.Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer), "kept while the workload may run")
				g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonDeleteFailed))
				g.Expect(err.Error()).To(ContainSubstring(kubeoperav1alpha1.AnnotationAbandonKustomization + "=true"))
			}
			g.Expect(tr.configs).To(BeEmpty(), "no connection to the vCluster")
			g.Expect(tr.countEvents("Warning TenantGone")).To(BeZero())

			// An administrator abandons the vCluster explicitly: the deletion ends.
			tr = newTestReconciler(t, nil, deletingPlacedApp(abandon), testfixture.Tenant(), kubeconfig())
			breakIt(tr)
			_, a := tr.reconcile(t)
			g.Expect(a.Name).To(BeEmpty(), "the app should be gone")
			g.Expect(tr.countEvents("Warning " + kubeoperav1alpha1.ReasonVClusterCleanupAbandoned)).To(Equal(1))
		})
	}

	t.Run("the Tenant is being deleted", func(t *testing.T) {
		g := NewWithT(t)
		app := deletingPlacedApp(nil)
		ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{
			Namespace: render.FluxNamespace(app), Name: render.FluxName(app),
			Labels: map[string]string{render.LabelManagedBy: render.ManagedBy},
		}}
		vc := fake.NewClientBuilder().WithScheme(testScheme()).WithObjects(ks).Build()
		leaving := testfixture.Tenant()
		leaving.Finalizers = []string{"tenants.test/vcluster"}
		leaving.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		tr := newTestReconciler(t, vc, app, leaving, kubeconfig())

		// The first pass deletes the Kustomization in the vCluster; the fake vCluster has no
		// kustomize-controller to prune, so it is gone at once and the same pass goes on.
		_, a := tr.reconcile(t)
		g.Expect(a.Name).To(BeEmpty(), "the app should be gone")
		err := vc.Get(t.Context(), types.NamespacedName{Namespace: ks.Namespace, Name: ks.Name}, &kustomizev1.Kustomization{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Kustomization was deleted through the vCluster: %v", err)
		g.Expect(tr.configs).To(HaveLen(1))
		g.Expect(tr.countEvents("Warning TenantGone")).To(BeZero())
	})
}
