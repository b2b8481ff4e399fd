package app_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// A host cluster without the Tenant CRD: the reconciler starts (no Tenant watch) and apps report
// TenantAPIUnavailable with a Warning Event and a slow requeue.
func TestTenantAPIUnavailable(t *testing.T) {
	g := NewWithT(t)
	bare, err := apptest.StartCluster(apptest.HostCRDDirs(true)...)
	if err != nil {
		if apptest.ExitCode(err) == 0 {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bare.Stop() })

	mgr, err := ctrl.NewManager(bare.Config, ctrl.Options{
		Scheme:                 apptest.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The suite's manager already runs a controller of that name in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	r, err := app.NewReconciler(mgr, app.Options{GitCacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})

	ns, err := apptest.Namespace(ctx, bare.Client, "no-tenants")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bare.Client.Create(ctx, testfixture.KubeOperaApp(
		testfixture.AppInNamespace(ns), testfixture.AppNamed("waiting"), testfixture.AppTenant(""),
		testfixture.AppExampleWorkload("waiting"), testfixture.AppGitURL("https://git.example.com/x.git"),
	))).To(Succeed())
	g.Eventually(func(g Gomega) {
		a := &kubeoperav1alpha1.KubeOperaApp{}
		g.Expect(bare.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "waiting"}, a)).To(Succeed())
		c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(kubeoperav1alpha1.ReasonTenantAPIUnavailable))
		g.Expect(c.Message).To(ContainSubstring("not installed"))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func() []string {
		list := &eventsv1.EventList{}
		g.Expect(bare.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Type == corev1.EventTypeWarning {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}, timeout, interval).Should(ContainElement(kubeoperav1alpha1.ReasonTenantAPIUnavailable))

	// The app can still be deleted: nothing was placed.
	g.Expect(bare.Client.Delete(ctx, &kubeoperav1alpha1.KubeOperaApp{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "waiting"}})).To(Succeed())
	g.Eventually(func() error {
		return bare.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "waiting"}, &kubeoperav1alpha1.KubeOperaApp{})
	}, timeout, interval).ShouldNot(Succeed())
}
