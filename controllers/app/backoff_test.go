package app

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

func TestBackoff(t *testing.T) {
	g := NewWithT(t)
	b := newBackoff(DefaultRetryBase, 5*time.Minute)
	a, other := types.NamespacedName{Namespace: "ns", Name: "a"}, types.NamespacedName{Namespace: "ns", Name: "b"}
	var got []time.Duration
	for range 7 {
		got = append(got, b.next(a))
	}
	g.Expect(got).To(Equal([]time.Duration{
		30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute,
	}))
	// Apps are independent.
	g.Expect(b.next(other)).To(Equal(30 * time.Second))
	// A success starts over.
	b.reset(a)
	g.Expect(b.next(a)).To(Equal(30 * time.Second))
	// Many failures never overflow.
	for range 200 {
		b.next(other)
	}
	g.Expect(b.next(other)).To(Equal(5 * time.Minute))
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
	g.Expect(o.MaxConcurrentReconciles).To(Equal(16))
}
