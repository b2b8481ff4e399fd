package app

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// pacerUnderTest is a tenantPacer whose releases run when the test says, at the time it says.
type pacerUnderTest struct {
	*tenantPacer
	delivered []types.NamespacedName
	// scheduled are the delays of the releases asked for and not run yet, with their functions.
	scheduled []scheduledRelease
}

type scheduledRelease struct {
	after time.Duration
	run   func()
}

func newPacerUnderTest(perSecond float64, burst int) *pacerUnderTest {
	p := &pacerUnderTest{}
	p.tenantPacer = newTenantPacer(perSecond, burst, func(app types.NamespacedName) { p.delivered = append(p.delivered, app) })
	p.after = func(d time.Duration, f func()) func() {
		p.scheduled = append(p.scheduled, scheduledRelease{d, f})
		return func() {}
	}
	return p
}

func appOf(tenant string, i int) types.NamespacedName {
	return types.NamespacedName{Namespace: tenant, Name: fmt.Sprintf("app-%d", i)}
}

// A hostile vCluster's event storm (1,000 events over its 10 apps) is paced: its burst goes
// through, every further app waits once however many events arrive for it, and is released at
// the Tenant's rate. Another Tenant's event is delivered at once all along.
func TestTenantEventStormIsPacedPerTenant(t *testing.T) {
	g := NewWithT(t)
	hostile, other := types.NamespacedName{Namespace: "cs-a", Name: "t-a"}, types.NamespacedName{Namespace: "cs-b", Name: "t-b"}
	p := newPacerUnderTest(1, 3)
	t0 := time.Unix(1_000_000, 0)

	for i := range 1000 {
		p.offer(hostile, appOf("cs-a", i%10), t0)
	}
	g.Expect(p.delivered).To(Equal([]types.NamespacedName{appOf("cs-a", 0), appOf("cs-a", 1), appOf("cs-a", 2)}), "the burst")
	// Every app waits once, the three delivered too: their objects changed again after the
	// event that enqueued them, so each gets one more pass.
	g.Expect(p.pendingOf(hostile)).To(Equal(10), "one entry per app")
	g.Expect(p.scheduled).To(HaveLen(1), "one release scheduled, not one per event")
	g.Expect(p.scheduled[0].after).To(Equal(time.Second), "when the next token comes")

	p.offer(other, appOf("cs-b", 0), t0)
	g.Expect(p.delivered).To(HaveLen(4))
	g.Expect(p.delivered[3]).To(Equal(appOf("cs-b", 0)), "the other Tenant is not behind the storm")

	// A second later one token came back: one more app, in arrival order; 2.5 s later two.
	p.release(hostile, t0.Add(time.Second))
	g.Expect(p.delivered[4:]).To(Equal([]types.NamespacedName{appOf("cs-a", 3)}))
	p.release(hostile, t0.Add(3500*time.Millisecond))
	g.Expect(p.delivered[5:]).To(Equal([]types.NamespacedName{appOf("cs-a", 4), appOf("cs-a", 5)}))
	g.Expect(p.pendingOf(hostile)).To(Equal(7))

	// A Tenant that is forgotten (its watches stopped) delivers nothing more.
	p.forget(hostile)
	p.release(hostile, t0.Add(time.Hour))
	g.Expect(p.delivered).To(HaveLen(7))
	g.Expect(p.pendingOf(hostile)).To(BeZero())
}

// An app already waiting is not offered twice, and a Tenant with no pending app and a token
// delivers at once (no release scheduled).
func TestTenantPacerDeliversAtOnceWithinTheBurst(t *testing.T) {
	g := NewWithT(t)
	p := newPacerUnderTest(DefaultTenantEventRate, DefaultTenantEventBurst)
	tenant := types.NamespacedName{Namespace: "cs", Name: "t"}
	now := time.Unix(1_000_000, 0)
	for i := range DefaultTenantEventBurst {
		p.offer(tenant, appOf("cs", i), now)
	}
	g.Expect(p.delivered).To(HaveLen(DefaultTenantEventBurst), "a shared branch's wave of Flux applies goes through at once")
	g.Expect(p.scheduled).To(BeEmpty())
}

// pendingOf is how many apps of Tenant t wait for a token.
func (p *pacerUnderTest) pendingOf(t types.NamespacedName) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.tenants[t]; ok {
		return len(b.pending)
	}
	return 0
}
