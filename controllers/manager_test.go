package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

func freeAddr(t *testing.T) string { return testenv.MustFreeAddr(t) }

func TestNewRefusesToRunNothing(t *testing.T) {
	g := NewWithT(t)
	opts := controllers.DefaultOptions()
	opts.EnableApps, opts.EnableControlPlane = false, false
	_, err := controllers.New(nil, opts)
	g.Expect(err).To(MatchError(ContainSubstring("both reconcilers are disabled")))
}

// The Tenant CRD belongs to another operator and may be missing: the manager must still start,
// serve its probes and keep running.
func TestManagerStartsWithoutTenantCRD(t *testing.T) {
	env := testenv.StartForTest(t, testenv.Options{WithoutTenantCRD: true})
	g := NewWithT(t)
	cacheScopeObjects(context.Background(), g, env.Client)

	probe := freeAddr(t)
	opts := controllers.DefaultOptions()
	opts.MetricsBindAddress = "0"
	opts.HealthProbeBindAddress = probe
	opts.Apps.GitCacheDir = t.TempDir()
	cfg := rest.CopyConfig(env.MustManagerConfig(t, "manager")) // the bundle's RBAC, AllNamespaces
	cfg.Wrap(scopeRequests.wrap)
	mgr, err := controllers.New(cfg, opts)
	g.Expect(err).NotTo(HaveOccurred())

	// The kinds the ControlPlane reconciler reads only from the API server
	// (controlplane.UncachedObjects) never go through the cache: the manager's client answers
	// them before the cache started, under RBAC that grants no watch on them.
	for _, list := range []client.ObjectList{&corev1.PodList{}, &appsv1.ReplicaSetList{}, &corev1.EventList{}} {
		g.Expect(mgr.GetClient().List(context.Background(), list, client.InNamespace("default"))).To(Succeed(), "%T", list)
	}
	err = mgr.GetClient().Get(context.Background(), client.ObjectKey{Namespace: "default", Name: "none"}, &policyv1.PodDisruptionBudget{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a PodDisruptionBudget is read from the API server: %v", err)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})

	g.Eventually(func() (int, error) {
		resp, err := http.Get(fmt.Sprintf("http://%s/readyz", probe)) //nolint:noctx // test probe with Eventually's timeout
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, nil
	}, 30*time.Second, 200*time.Millisecond).Should(Equal(http.StatusOK))
	g.Eventually(mgr.Elected(), 30*time.Second).Should(BeClosed())
	g.Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	assertCacheScope(ctx, g, mgr.GetCache())
	assertSecretScope(ctx, g, env.Client, mgr.GetCache())
	// Both reconcilers are running; the manager has not stopped with an error.
	g.Consistently(done, 2*time.Second, 100*time.Millisecond).ShouldNot(Receive())
}
