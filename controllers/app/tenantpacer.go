package app

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

// The passes a vCluster's own events cause are paced per Tenant. Every Tenant's watches
// (tenantwatch.go) enqueue the apps their objects belong to; a vCluster administrator can write
// those objects as fast as the vCluster's API server takes them (a Kustomization status flipping,
// Certificates created and deleted), and each pass costs the operator a Git round trip and a
// dozen requests on workers all tenants share. So each Tenant has a token bucket: an event for
// an app of a Tenant with a token enqueues the app at once; without one, the app waits in the
// Tenant's pending set (one entry per app, however many events arrive for it) and is enqueued as
// tokens come back. One Tenant's storm therefore costs the shared workers at most its rate of
// passes per second, and another Tenant's events never wait behind it. The burst lets a Tenant's
// ordinary wave (Flux applying every app of a shared branch after a push) through at once.

// DefaultTenantEventRate is the steady rate of passes, per second, one Tenant's vCluster events
// may cause; DefaultTenantEventBurst how many may come at once.
const (
	DefaultTenantEventRate  = 10
	DefaultTenantEventBurst = 100
)

// tenantPacer spreads, per Tenant, the apps its vCluster's events enqueue (see above).
type tenantPacer struct {
	limit rate.Limit
	burst int
	// deliver enqueues an app; it may block (the controller's channel source).
	deliver func(app types.NamespacedName)
	// after runs f after d (time.AfterFunc; tests replace it).
	after func(d time.Duration, f func()) func()

	mu      sync.Mutex
	tenants map[types.NamespacedName]*tenantBucket
}

// tenantBucket is one Tenant's tokens and the apps waiting for one, in arrival order.
type tenantBucket struct {
	lim     *rate.Limiter
	pending []types.NamespacedName
	waiting map[types.NamespacedName]bool
	// stop cancels the scheduled release; nil when none is scheduled.
	stop func()
}

func newTenantPacer(perSecond float64, burst int, deliver func(types.NamespacedName)) *tenantPacer {
	return &tenantPacer{
		limit: rate.Limit(perSecond), burst: burst, deliver: deliver,
		after: func(d time.Duration, f func()) func() {
			t := time.AfterFunc(d, f)
			return func() { t.Stop() }
		},
		tenants: map[types.NamespacedName]*tenantBucket{},
	}
}

// offer enqueues app, an app of Tenant t one of t's events concerns, at once when t has a token,
// and otherwise keeps it pending until one comes back.
func (p *tenantPacer) offer(t, app types.NamespacedName, now time.Time) {
	p.mu.Lock()
	b := p.bucket(t)
	if b.waiting[app] {
		p.mu.Unlock()
		metrics.CountVClusterEvent(metrics.VClusterEventCoalesced)
		return
	}
	if len(b.pending) == 0 && b.lim.AllowN(now, 1) {
		p.mu.Unlock()
		metrics.CountVClusterEvent(metrics.VClusterEventEnqueued)
		p.deliver(app)
		return
	}
	metrics.CountVClusterEvent(metrics.VClusterEventDeferred)
	b.waiting[app] = true
	b.pending = append(b.pending, app)
	p.scheduleLocked(t, b, now)
	p.mu.Unlock()
}

// release enqueues the pending apps of Tenant t its tokens allow at now, oldest first, and
// schedules the next release while some remain.
func (p *tenantPacer) release(t types.NamespacedName, now time.Time) {
	p.mu.Lock()
	b, ok := p.tenants[t]
	if !ok {
		p.mu.Unlock()
		return
	}
	b.stop = nil
	var ready []types.NamespacedName
	for len(b.pending) > 0 && b.lim.AllowN(now, 1) {
		app := b.pending[0]
		b.pending = b.pending[1:]
		delete(b.waiting, app)
		ready = append(ready, app)
	}
	p.scheduleLocked(t, b, now)
	p.mu.Unlock()
	for _, app := range ready {
		metrics.CountVClusterEvent(metrics.VClusterEventReleased)
		p.deliver(app)
	}
}

// scheduleLocked arranges the next release of t when apps are pending and none is scheduled.
func (p *tenantPacer) scheduleLocked(t types.NamespacedName, b *tenantBucket, now time.Time) {
	if len(b.pending) == 0 || b.stop != nil {
		return
	}
	r := b.lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	r.CancelAt(now) // only the time was wanted; release takes the token
	b.stop = p.after(d, func() { p.release(t, time.Now()) })
}

// forget drops Tenant t (its watches stopped): its pending apps are not enqueued.
func (p *tenantPacer) forget(t types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.tenants[t]; ok && b.stop != nil {
		b.stop()
	}
	delete(p.tenants, t)
}

func (p *tenantPacer) bucket(t types.NamespacedName) *tenantBucket {
	b, ok := p.tenants[t]
	if !ok {
		b = &tenantBucket{lim: rate.NewLimiter(p.limit, p.burst), waiting: map[types.NamespacedName]bool{}}
		p.tenants[t] = b
	}
	return b
}
