package controlplane_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// With the reconciler running in a manager, the watches repair drift while the ControlPlane is
// ready: a deleted Deployment or Secret comes back, an edited Service field is restored, and an
// edit of the referenced password Secret rolls the Controller pods.
func TestWatchesRestoreOwnedObjects(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.startManager()
	secret := h.createSecret("bootstrap", map[string]string{"password": fake.DefaultPassword})
	h.create(h.controlPlane(testfixture.WithBootstrapPasswordFrom("bootstrap", "password")))
	g.Eventually(func(g Gomega) {
		h.assignAddresses()
		c := trueConditionOf(h.get())
		g.Expect(c.Type).To(Equal(datasancev3.ConditionReady))
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	// A deleted Deployment is recreated.
	old := h.deployment("controller")
	g.Expect(env.Client.Delete(h.ctx, old)).To(Succeed())
	g.Eventually(func() bool {
		d := &appsv1.Deployment{}
		return h.exists(d, "controller") && d.UID != old.UID
	}).WithTimeout(10 * time.Second).Should(BeTrue())

	// An edited Service field is restored.
	svc := &corev1.Service{}
	g.Expect(h.exists(svc, "router")).To(BeTrue())
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	g.Expect(env.Client.Update(h.ctx, svc)).To(Succeed())
	g.Eventually(func() corev1.ServiceExternalTrafficPolicy {
		s := &corev1.Service{}
		h.exists(s, "router")
		return s.Spec.ExternalTrafficPolicy
	}).WithTimeout(10 * time.Second).Should(Equal(corev1.ServiceExternalTrafficPolicyLocal))

	// A deleted credentials Secret and a deleted generated certificate come back.
	g.Expect(env.Client.Delete(h.ctx, h.secret("controller-db-credentials"))).To(Succeed())
	g.Expect(env.Client.Delete(h.ctx, h.secret("router-local-server"))).To(Succeed())
	g.Eventually(func() bool {
		return h.exists(&corev1.Secret{}, "controller-db-credentials") && h.exists(&corev1.Secret{}, "router-local-server")
	}).WithTimeout(10 * time.Second).Should(BeTrue())

	// The administrator changes the bootstrap admin's password, in the Controller and in the
	// referenced Secret: the pods roll. (The operator tries changed credentials at once; before
	// this test changed the Controller's side too, that login was refused whenever a pass needed
	// a session after the change, and the ControlPlane ended LoginFailed.)
	hash := h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]
	h.api.SetCredentials(fake.DefaultUsername, "changed")
	secret.StringData = map[string]string{"password": "changed"}
	g.Expect(env.Client.Update(h.ctx, secret)).To(Succeed())
	g.Eventually(func() string {
		return h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]
	}).WithTimeout(10 * time.Second).ShouldNot(Equal(hash))
	h.eventuallyReadyAfterRollouts()
}

// eventuallyReadyAfterRollouts waits, while a manager runs the reconciler, until the ControlPlane
// is ready, finishing the workloads' rollouts on each try as the workload controllers would (the
// stand-in of finishRollouts). The bound is generous: a rollout means several passes (the
// Controller's restart is detected and the router, hub and CAs registered again), each of
// which generates keys and opens TLS connections under the race detector, beside the other
// suites of make test on two cores; how fast it is, is the benchmarks' business.
func (h *harness) eventuallyReadyAfterRollouts() {
	h.t.Helper()
	h.g.Eventually(func(g Gomega) {
		h.finishRollouts()
		c := trueConditionOf(h.get())
		g.Expect(c.Type).To(Equal(datasancev3.ConditionReady), "%s: %s", c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(datasancev3.ReasonReconciled), c.Message)
	}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// startManager runs the reconciler in a manager whose cache covers the test namespace, with the
// harness's fake Controller; it stops with the test.
func (h *harness) startManager() {
	h.t.Helper()
	mgr, err := ctrl.NewManager(env.MustManagerConfig(h.t, "cp-manager-"+h.ns, h.ns), ctrl.Options{ // the bundle's RBAC, SingleNamespace
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: controlplane.UncachedObjects()}},
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{h.ns: {}}},
		Controller:             config.Controller{SkipNameValidation: new(true)},
	})
	h.g.Expect(err).NotTo(HaveOccurred())
	r := controlplane.NewReconciler(mgr, h.r.Options)
	// Secrets are read from the API server, as the operator's manager does for the Secrets it
	// does not own (controllers.secretReads): a cached read could miss a Secret whose creation
	// the metadata watch already reported.
	live := mgr.GetAPIReader()
	liveSecrets := interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Secret); ok {
			return live.Get(ctx, key, obj, opts...)
		}
		return c.Get(ctx, key, obj, opts...)
	}}
	// Around the reconciler's own client, whose uncached reads (UncachedObjects: budgets, the
	// pod and ReplicaSet lists of a takeover) go to the API server: the bundle grants no watch on
	// them.
	r.Client = interceptor.NewClient(interceptor.NewClient(noWatch{r.Client}, liveSecrets), h.countWrites())
	r.NewControllerClient = h.clientFactory()
	r.KeyGenerator = testKeyGenerator
	h.g.Expect(r.SetupWithManager(mgr)).To(Succeed())
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(h.ctx)
	go func() { done <- mgr.Start(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		h.g.Expect(<-done).To(Succeed())
	})
}

func trueConditionOf(cp *datasancev3.ControlPlane) metav1.Condition {
	for _, c := range cp.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return metav1.Condition{}
}
