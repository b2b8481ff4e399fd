package app

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRateLimiterKeepsTheSeedDelays(t *testing.T) {
	g := NewWithT(t)
	rl := newRateLimiter(Options{RetryMax: 5 * time.Minute}.withDefaults())
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	other := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}
	var got []time.Duration
	for range 7 {
		got = append(got, rl.When(a))
	}
	g.Expect(got).To(Equal([]time.Duration{
		30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute,
	}))
	// Apps are independent.
	g.Expect(rl.When(other)).To(Equal(30 * time.Second))
	// A success (controller-runtime calls Forget) starts over.
	rl.Forget(a)
	g.Expect(rl.When(a)).To(Equal(30 * time.Second))
	// Many failures never overflow.
	for range 200 {
		rl.When(other)
	}
	g.Expect(rl.When(other)).To(Equal(5 * time.Minute))
}

func TestOptionsDefaults(t *testing.T) {
	g := NewWithT(t)
	o := Options{SyncPollInterval: time.Second}.withDefaults()
	g.Expect(o.RetryBase).To(Equal(30 * time.Second))
	g.Expect(o.RetryMax).To(Equal(10 * time.Minute))
	g.Expect(o.SyncPollInterval).To(Equal(time.Second))
	g.Expect(o.ResyncInterval).To(Equal(10 * time.Minute))
	g.Expect(o.DeletePollInterval).To(Equal(2 * time.Second))
	g.Expect(o.TenantAPIRetry).To(Equal(5 * time.Minute))
	g.Expect(o.VClusterTimeout).To(Equal(15 * time.Second))
	g.Expect(o.PassTimeout).To(Equal(3*time.Minute), "longer than one Git batch (gitops.DefaultTimeout)")
	g.Expect(o.MaxConcurrentReconciles).To(Equal(16))
	g.Expect(o.MaxGitRepositorySize).To(Equal(int64(256 << 20)))
	g.Expect(o.MaxGitInflatedSize).To(Equal(int64(32 << 20)))
	g.Expect(o.MaxAppFolderSize).To(Equal(int64(256 << 10)))
	g.Expect(o.MaxConcurrentGitOperations).To(Equal(4))
	g.Expect(o.MaxConcurrentGitOperationsPerHost).To(Equal(3))
	g.Expect(o.MaxGitCacheSize).To(Equal(int64(1 << 30)))
	// Secure by default: a vCluster server is a Service of the cluster, a Git host is public.
	g.Expect(o.AllowedVClusterServers).To(Equal([]string{"*.svc", "*.svc.cluster.local"}))
	g.Expect(o.AllowedGitHosts).To(BeEmpty())
	g.Expect(o.AllowInternalGitHosts).To(BeFalse())
	// A list replaces the default.
	g.Expect(Options{AllowedVClusterServers: []string{"127.0.0.1"}}.withDefaults().AllowedVClusterServers).To(Equal([]string{"127.0.0.1"}))
}
