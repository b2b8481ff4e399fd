package app_test

import (
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// proxiedTenant adds a Ready Tenant whose exported kubeconfig reaches the vCluster API server
// through a TCP proxy of its own, and returns the proxy: it counts the connections the operator
// holds open to that vCluster, on the server's side.
func (f *fixture) proxiedTenant(name string) *apptest.ConnProxy {
	f.t.Helper()
	target, err := url.Parse(vcluster.Config.Host)
	f.g.Expect(err).NotTo(HaveOccurred())
	proxy, err := apptest.StartConnProxy(target.Host)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.t.Cleanup(proxy.Stop)
	// The API server's certificate names 127.0.0.1, so it verifies through the proxy.
	kubeconfig := kubeconfigWithServer(f, "https://"+proxy.Addr())
	err = apptest.CreateTenant(f.ctx, host.Client, f.tenant(name, testfixture.TenantReady(time.Now().Add(-time.Minute))))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.create(apptest.KubeconfigSecret(f.ns, "vc-"+name, kubeconfig))
	return proxy
}

// The operator keeps connections to a vCluster only while it uses it: when the last app placed
// in a Tenant is deleted, or the Tenant is gone, the cached client is dropped and its
// connections are closed at once (not after the transport's idle timeout).
func TestVClusterConnectionsClosedWhenUnusedOrGone(t *testing.T) {
	f := newFixture(t)
	unused, gone := f.proxiedTenant("conn-unused"), f.proxiedTenant("conn-gone")
	f.create(f.newApp("a", "conn-unused"), f.newApp("b", "conn-gone"))
	f.waitReady("a")
	f.waitReady("b")
	// Keep-alive: the idle connections of a used client stay open.
	f.g.Expect(unused.Open()).To(BeNumerically(">", 0))
	f.g.Expect(gone.Open()).To(BeNumerically(">", 0))

	// Unused: the last app of the Tenant is deleted.
	f.deleteApp("a")
	f.waitGone("a")
	f.g.Eventually(unused.Open, 5*time.Second, 20*time.Millisecond).Should(BeZero())
	f.g.Expect(gone.Open()).To(BeNumerically(">", 0), "another vCluster's connections stay")

	// Gone: the Tenant is deleted while its app still exists.
	f.g.Expect(host.Client.Delete(f.ctx, &tenantv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "conn-gone"}})).To(Succeed())
	f.waitCondition("b", kubeoperav1alpha1.ConditionTenantResolved, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantNotFound)
	f.g.Eventually(gone.Open, 5*time.Second, 20*time.Millisecond).Should(BeZero())
	opened := gone.Opened()
	// Retries of the app while its Tenant is gone open nothing.
	f.poke("b")
	f.waitCondition("b", kubeoperav1alpha1.ConditionTenantResolved, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantNotFound)
	f.g.Expect(gone.Opened()).To(Equal(opened))
}
