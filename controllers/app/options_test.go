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
	g.Expect(o.MaxGitCacheSize).To(Equal(int64(1 << 30)))
}

func TestHostAllowed(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		allowed []string
		url     string
		want    bool
	}{
		{nil, "https://anything.example.org/x.git", true},
		{[]string{"git.example.com"}, "https://git.example.com/x.git", true},
		{[]string{"git.example.com"}, "ssh://git@GIT.example.com:2222/x.git", true},
		{[]string{"git.example.com"}, "https://git.example.com.evil.io/x.git", false},
		{[]string{"git.example.com"}, "http://169.254.169.254/latest", false},
		{[]string{"git.example.com:443"}, "https://git.example.com:8443/x.git", false},
		{[]string{"git.example.com:443"}, "https://git.example.com:443/x.git", true},
		{[]string{"*.svc"}, "https://t1.cs-1.svc:443", true},
		{[]string{"*.svc"}, "https://svc", false},
		{[]string{"*.svc"}, "https://10.0.0.1:6443", false},
		{[]string{"a.example.com", "*.svc"}, "https://t1.ns.svc", true},
		{[]string{"a.example.com"}, "::not a url", false},
		// Cloud metadata endpoints: refused with an empty list and by wildcards, reached only
		// when named.
		{nil, "http://169.254.169.254/computeMetadata/v1", false},
		{nil, "http://metadata.google.internal/computeMetadata/v1", false},
		{nil, "http://METADATA.google.internal./x", false},
		{nil, "http://[fd00:ec2::254]/latest", false},
		{nil, "https://[fe80::1]:443/x.git", false},
		{[]string{"*.internal"}, "http://metadata.google.internal/x", false},
		{[]string{"169.254.169.254"}, "http://169.254.169.254/latest", true},
		{nil, "https://10.0.0.1:6443", true},
	} {
		ok, _ := hostAllowed(tc.allowed, tc.url)
		g.Expect(ok).To(Equal(tc.want), "%v %s", tc.allowed, tc.url)
	}
}
