package controlplane_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// One ControlPlane whose Controller black-holes every request does not stall another one in
// another namespace: with the default worker count and pass deadline, the healthy ControlPlane
// reaches ready within twice the time it takes alone.
func TestHangingControllerDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	alone := timeToReady(t, false)
	beside := timeToReady(t, true)
	t.Logf("ready alone in %s, beside a hanging Controller in %s", alone.Round(100*time.Millisecond), beside.Round(100*time.Millisecond))
	NewWithT(t).Expect(beside).To(BeNumerically("<=", 2*alone))
}

// timeToReady runs a manager over a healthy ControlPlane's namespace (and, with hanging, over a
// second namespace whose Controller hangs on every call) and returns how long the healthy one
// takes from creation to ready. Each ControlPlane is named after its fake Controller's loopback
// address and the endpoint template is {name}:51121, so the operator dials each ControlPlane's
// own fake at the address it computes.
func timeToReady(t *testing.T, hanging bool) time.Duration {
	t.Helper()
	healthy := newHarness(t)
	harnesses := []*harness{healthy}
	if hanging {
		stuck := newHarness(t)
		stuck.api.FailAlways("* /api/v3/*", fake.Failure{Hang: true})
		harnesses = append(harnesses, stuck)
	}
	namespaces := map[string]cache.Config{}
	var watched []string
	for _, h := range harnesses {
		namespaces[h.ns] = cache.Config{}
		watched = append(watched, h.ns)
	}
	mgr, err := ctrl.NewManager(env.MustManagerConfig(t, "cp-iso-"+healthy.ns, watched...), ctrl.Options{ // the bundle's RBAC, MultiNamespace
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: controlplane.UncachedObjects()}},
		Cache:                  cache.Options{DefaultNamespaces: namespaces},
		Controller:             config.Controller{SkipNameValidation: new(true)},
	})
	healthy.g.Expect(err).NotTo(HaveOccurred())
	opts := controlplane.DefaultOptions()
	opts.ControllerEndpointTemplate = "{name}:51121"
	r := controlplane.NewReconciler(mgr, opts)
	r.NewControllerClient = healthy.clientFactory()
	r.KeyGenerator = testKeyGenerator
	healthy.g.Expect(r.SetupWithManager(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(healthy.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		healthy.g.Expect(<-done).To(Succeed())
	}()

	create := func(h *harness) {
		h.g.Expect(env.Client.Create(h.ctx, h.controlPlane(testfixture.Named(h.controllerLB)))).To(Succeed())
	}
	if hanging {
		// The hanging one first, until a pass of it is stuck in a Controller call.
		stuck := harnesses[1]
		create(stuck)
		stuck.g.Eventually(func() []string {
			stuck.assignAddresses()
			return stuck.api.Calls()
		}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).ShouldNot(BeEmpty())
	}
	create(healthy)
	start := time.Now()
	healthy.g.Eventually(func(g Gomega) {
		healthy.assignAddresses()
		cp := &datasancev3.ControlPlane{}
		g.Expect(env.Client.Get(healthy.ctx, healthy.key(healthy.controllerLB), cp)).To(Succeed())
		g.Expect(trueConditionOf(cp).Type).To(Equal(datasancev3.ConditionReady))
	}).WithTimeout(2 * time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	return time.Since(start)
}
