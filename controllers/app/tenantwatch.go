package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// vCluster watches (docs/app-controller.md, "Sync read-back"). Flux reports in the vCluster's
// Kustomization when it applied a pushed commit, the ingress controller (through vcluster's sync)
// in the Ingress's status when it serves the app's host, and cert-manager in a Certificate when
// the Ingress's certificate is issued. Instead of reading them back on a timer, the reconciler
// watches, per Tenant, the kinds of watchedkinds.go and enqueues the app an object belongs to
// when one is created or deleted, or when it changes in a way a pass reads (each kind's
// eventFilter: for a Kustomization, not the Ready=Unknown that Flux writes at the start of every
// reconcile, nor the Ready=True that repeats the last outcome). The watches of a Tenant start
// when its vCluster client is built, are replaced with the client (a rotated kubeconfig), and
// stop when the client is dropped or the manager stops. Each kind has a cache of its own, so a
// kind that cannot be watched (the Flux or cert-manager CRDs are installed after the client was
// built) does not hold back the others; it is retried with the app's backoff. They share one
// HTTP transport per Tenant. SyncPollInterval stays as a safety net for the time a watch does
// not run (e.g. a kubeconfig whose user may get but not watch Kustomizations).

// vclusterWatches holds the watches of each Tenant's vCluster. The zero value is unusable; a
// nil *vclusterWatches does nothing (reconcilers built without SetupWithManager).
type vclusterWatches struct {
	scheme *runtime.Scheme
	// retryBase and retryMax are the backoff of a watch that failed to start (the app's
	// RetryBase and RetryMax).
	retryBase, retryMax time.Duration
	// events carries the apps to reconcile to the controller (a channel source).
	events chan event.TypedGenericEvent[*kubeoperav1alpha1.KubeOperaApp]
	// pacer spreads each Tenant's events over time (tenantpacer.go) before they reach events.
	pacer *tenantPacer
	// stopped is closed when the manager stops: nothing is sent to events after it.
	stopped chan struct{}
	// kinds are the kinds watched in every vCluster.
	kinds []watchedKind

	mu      sync.Mutex
	ctx     context.Context // the manager's, set when it starts
	watches map[types.NamespacedName]*tenantWatch
}

// tenantWatch is the running watches of one Tenant.
type tenantWatch struct {
	version tenant.SecretVersion
	cancel  context.CancelFunc
	// mapper is the REST mapper of the vCluster's client, which the watches map kinds with.
	mapper apimeta.RESTMapper
	// started holds the names of the kinds whose cache runs.
	started sync.Map
}

// setupVClusterWatches registers the channel source on the controller and a runnable that
// records the manager's context and stops every watch with it.
func (r *Reconciler) setupVClusterWatches(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	w := &vclusterWatches{
		scheme:    mgr.GetScheme(),
		retryBase: r.Options.RetryBase,
		retryMax:  r.Options.RetryMax,
		events:    make(chan event.TypedGenericEvent[*kubeoperav1alpha1.KubeOperaApp], 1024),
		stopped:   make(chan struct{}),
		kinds:     r.watchedKinds(),
		watches:   map[types.NamespacedName]*tenantWatch{},
	}
	w.pacer = newTenantPacer(r.Options.TenantEventRate, r.Options.TenantEventBurst, w.send)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		w.mu.Lock()
		w.ctx = ctx
		w.mu.Unlock()
		<-ctx.Done()
		close(w.stopped)
		w.stopAll()
		return nil
	})); err != nil {
		return nil, err
	}
	r.vclusterWatches = w
	return b.WatchesRawSource(source.TypedChannel(w.events, &handler.TypedEnqueueRequestForObject[*kubeoperav1alpha1.KubeOperaApp]{})), nil
}

// send hands app to the controller, unless the manager stopped.
func (w *vclusterWatches) send(app types.NamespacedName) {
	obj := &kubeoperav1alpha1.KubeOperaApp{}
	obj.Namespace, obj.Name = app.Namespace, app.Name
	select {
	case w.events <- event.TypedGenericEvent[*kubeoperav1alpha1.KubeOperaApp]{Object: obj}:
	case <-w.stopped:
	}
}

// watch makes sure the vCluster of Tenant t is watched with cfg, the REST config of vc, the
// client built for kubeconfig version v, and with vc's REST mapper. The watches of an older
// version are replaced.
func (w *vclusterWatches) watch(t types.NamespacedName, v tenant.SecretVersion, cfg *rest.Config, vc client.Client) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil {
		return // the manager has not started (or has stopped): the poll covers it
	}
	if old, ok := w.watches[t]; ok {
		if old.version == v {
			return
		}
		old.cancel()
	}
	ctx, cancel := context.WithCancel(w.ctx)
	tw := &tenantWatch{version: v, cancel: cancel, mapper: vc.RESTMapper()}
	w.watches[t] = tw
	go w.run(ctx, t, tw, rest.CopyConfig(cfg))
}

// forget stops the watches of Tenant t (its client was dropped).
func (w *vclusterWatches) forget(t types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.watches[t]; ok {
		old.cancel()
		delete(w.watches, t)
	}
	w.pacer.forget(t)
}

func (w *vclusterWatches) stopAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for t, old := range w.watches {
		old.cancel()
		delete(w.watches, t)
		w.pacer.forget(t)
	}
	w.ctx = nil
}

// watching reports whether the vCluster of Tenant t is watched; with kind, whether that kind's
// cache runs.
func (w *vclusterWatches) watching(t types.NamespacedName, kind string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	tw, ok := w.watches[t]
	w.mu.Unlock()
	if !ok || kind == "" {
		return ok
	}
	_, started := tw.started.Load(kind)
	return started
}

// run watches every kind in the Tenant's vCluster until ctx ends, over one HTTP transport whose
// connections are all closed then, mapping kinds with tw.mapper.
//
// tw.mapper is the vCluster client's (client.Client.RESTMapper, built by tenant.NewRESTMapper):
// it keeps what it read of the group-versions it was asked about, and asks again for a kind it
// does not know, so a CRD installed later is still found when its watch starts again. One mapper
// per vCluster, shared by its client and its watches: make bench P5's heap profiles of
// 2026-12-05 (30 vClusters) held 21 MB of a 42 MB live heap in controller-runtime's whole-server
// discovery mappers with one per watched kind plus the client's, and 15.5 MB of 39 MB with two.
func (w *vclusterWatches) run(ctx context.Context, t types.NamespacedName, tw *tenantWatch, cfg *rest.Config) {
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "kubeoperaapp", "tenant", t.String())
	// The caches' requests must not be cut by the per-request timeout of the reconciler's
	// client: a watch is one long request.
	cfg.Timeout = 0
	// A transport of its own (a dialer of its own keeps client-go's TLS cache from sharing one)
	// whose connections are all closed when the watches stop, idle or not (a watch stream that
	// ended a moment ago may not count as idle yet): a dropped Tenant keeps no connection of the
	// operator open (internal/tenant.Clients closes its clients' idle connections likewise).
	conns := &trackedDialer{d: &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, open: map[net.Conn]struct{}{}}
	defer conns.closeAll()
	cfg.Dial = conns.DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		log.Error(err, "Cannot watch the vCluster: build the HTTP client; Synced is polled")
		return
	}
	defer utilnet.CloseIdleConnectionsFor(hc.Transport)
	var wg sync.WaitGroup
	for _, k := range w.kinds {
		wg.Go(func() { w.runKind(ctx, t, tw, cfg, hc, tw.mapper, k) })
	}
	wg.Wait()
}

// runKind watches one kind until ctx ends. A watch that cannot start (its CRD is not installed
// in the vCluster yet, the vCluster does not answer) or that ends before ctx is started again
// with the app's backoff (retryBase, doubling up to retryMax), with a fresh cache each time (the
// vCluster's REST mapper looks a kind it does not know up again), so that CRDs installed later
// are found; the poll covers the time in between. A kind
// that is optional (cert-manager need not be installed) and not served is logged at V(1) only.
func (w *vclusterWatches) runKind(ctx context.Context, t types.NamespacedName, tw *tenantWatch, cfg *rest.Config, hc *http.Client, mapper apimeta.RESTMapper, k watchedKind) {
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "kubeoperaapp", "tenant", t.String(), "kind", k.name)
	delay := w.retryBase
	for {
		err := w.watchOnce(ctx, t, cfg, hc, mapper, k, func() { tw.started.Store(k.name, true) })
		tw.started.Delete(k.name)
		if ctx.Err() != nil {
			return
		}
		if k.optional && apimeta.IsNoMatchError(err) {
			log.V(1).Info("Kind not served in the vCluster; watching it once it is", "retryIn", delay, "reason", err.Error())
		} else {
			log.Error(err, "Cannot watch the vCluster; Synced is polled until the watch starts", "retryIn", delay)
		}
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return
		}
		delay = min(2*delay, w.retryMax)
	}
}

// watchOnce starts a cache of one kind in the Tenant's vCluster and feeds its events to the
// controller until ctx ends (nil) or the cache fails (its error). started is called once the
// informer is registered.
func (w *vclusterWatches) watchOnce(ctx context.Context, t types.NamespacedName, cfg *rest.Config, hc *http.Client, mapper apimeta.RESTMapper, k watchedKind, started func()) error {
	byObject := cache.ByObject{Transform: trimWatched}
	if k.selector != nil {
		byObject.Label = k.selector
	}
	c, err := cache.New(cfg, cache.Options{
		HTTPClient: hc,
		Scheme:     w.scheme,
		Mapper:     mapper,
		ByObject:   map[client.Object]cache.ByObject{k.object(): byObject},
	})
	if err != nil {
		return fmt.Errorf("build the cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, k.object(), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("start the %s informer: %w", k.name, err)
	}
	enqueue := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		o, ok := obj.(client.Object)
		if !ok {
			return
		}
		for _, app := range k.appsOf(ctx, t, o) {
			if ctx.Err() != nil {
				return
			}
			w.pacer.offer(t, app, time.Now())
		}
	}
	// A filter per cache: a restarted cache lists every object again, and each is worth a pass.
	filter := k.filter()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(client.Object); !ok || filter.added(o) {
				enqueue(obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(client.Object)
			n, ok2 := newObj.(client.Object)
			if !ok1 || !ok2 || filter.updated(o, n) {
				enqueue(newObj)
			}
		},
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if o, ok := obj.(client.Object); ok {
				filter.deleted(o)
			}
			enqueue(obj)
		},
	}); err != nil {
		return fmt.Errorf("add the event handler: %w", err)
	}
	started()
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("run the cache: %w", err)
	}
	if ctx.Err() == nil {
		return errors.New("the cache stopped")
	}
	return nil
}

// WatchesKustomizations reports whether the vCluster of Tenant namespace/name is watched;
// tests use it to prove a watch stops with its client.
func (r *Reconciler) WatchesKustomizations(namespace, name string) bool {
	return r.vclusterWatches.watching(types.NamespacedName{Namespace: namespace, Name: name}, "")
}

// WatchesVClusterKind reports whether the cache of one watched kind ("Kustomization", "Ingress",
// "Certificate") runs for Tenant namespace/name.
func (r *Reconciler) WatchesVClusterKind(namespace, name, kind string) bool {
	return r.vclusterWatches.watching(types.NamespacedName{Namespace: namespace, Name: name}, kind)
}

// trackedDialer dials with d and remembers the connections still open, so that closeAll can
// end them when their only user (one Tenant's Kustomization watch) stops.
type trackedDialer struct {
	d    *net.Dialer
	mu   sync.Mutex
	open map[net.Conn]struct{}
}

func (t *trackedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := t.d.DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, owner: t}
	t.mu.Lock()
	t.open[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

func (t *trackedDialer) closeAll() {
	t.mu.Lock()
	open := make([]net.Conn, 0, len(t.open))
	for c := range t.open {
		open = append(open, c)
	}
	t.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

type trackedConn struct {
	net.Conn
	owner *trackedDialer
	once  sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.open, c)
		c.owner.mu.Unlock()
	})
	return c.Conn.Close()
}
