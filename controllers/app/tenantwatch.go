package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
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
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// Kustomization watches (docs/app-controller.md, "Sync read-back"). Flux reports in the
// vCluster's Kustomization when it applied a pushed commit. Instead of reading it back on a
// timer, the reconciler watches, per Tenant, the Kustomizations it created there (label
// app.kubernetes.io/managed-by=kubeopera-operator, so a vCluster's other Kustomizations are
// neither listed nor cached) and enqueues the owning app when one is created, deleted, or its
// status or generation changes. A watch starts when the Tenant's vCluster client is built, is
// replaced with the client (a rotated kubeconfig), and stops when the client is dropped or the
// manager stops. A watch that cannot start (the Flux CRDs are installed after the client was
// built) is retried with the app's backoff. SyncPollInterval stays as a safety net for the time a
// watch does not run (e.g. a kubeconfig whose user may get but not watch Kustomizations).

// kustomizationWatches holds one Kustomization cache per Tenant. The zero value is unusable;
// a nil *kustomizationWatches does nothing (reconcilers built without SetupWithManager).
type kustomizationWatches struct {
	scheme *runtime.Scheme
	// retryBase and retryMax are the backoff of a watch that failed to start (the app's
	// RetryBase and RetryMax).
	retryBase, retryMax time.Duration
	// events carries the apps to reconcile to the controller (a channel source).
	events chan event.TypedGenericEvent[*kubeoperav1alpha1.KubeOperaApp]
	// appsOf lists the apps of a Tenant whose Kustomization is (namespace, name).
	appsOf func(ctx context.Context, t types.NamespacedName, ks types.NamespacedName) []types.NamespacedName

	mu      sync.Mutex
	ctx     context.Context // the manager's, set when it starts
	watches map[types.NamespacedName]*kustomizationWatch
}

type kustomizationWatch struct {
	version tenant.SecretVersion
	cancel  context.CancelFunc
}

// setupKustomizationWatches registers the channel source on the controller and a runnable that
// records the manager's context and stops every watch with it.
func (r *Reconciler) setupKustomizationWatches(mgr ctrl.Manager, b *builder.Builder) (*builder.Builder, error) {
	w := &kustomizationWatches{
		scheme:    mgr.GetScheme(),
		retryBase: r.Options.RetryBase,
		retryMax:  r.Options.RetryMax,
		events:    make(chan event.TypedGenericEvent[*kubeoperav1alpha1.KubeOperaApp], 1024),
		watches:   map[types.NamespacedName]*kustomizationWatch{},
	}
	w.appsOf = r.appsOfKustomization
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		w.mu.Lock()
		w.ctx = ctx
		w.mu.Unlock()
		<-ctx.Done()
		w.stopAll()
		return nil
	})); err != nil {
		return nil, err
	}
	r.kustomizations = w
	return b.WatchesRawSource(source.TypedChannel(w.events, &handler.TypedEnqueueRequestForObject[*kubeoperav1alpha1.KubeOperaApp]{})), nil
}

// appsOfKustomization lists the apps placed in Tenant t whose Flux Kustomization is ks. Apps
// being deleted are left out: deletion removes the Kustomization itself and waits for it on its
// own requeue (DeletePollInterval), and an event queued behind the last deletion pass would only
// run a stale one.
func (r *Reconciler) appsOfKustomization(ctx context.Context, t, ks types.NamespacedName) []types.NamespacedName {
	apps := &kubeoperav1alpha1.KubeOperaAppList{}
	if err := r.List(ctx, apps, client.InNamespace(t.Namespace), client.MatchingFields{indexTenant: t.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the apps of a Tenant for a Kustomization event")
		return nil
	}
	var out []types.NamespacedName
	for i := range apps.Items {
		a := &apps.Items[i]
		if a.DeletionTimestamp.IsZero() && render.FluxNamespace(a) == ks.Namespace && render.FluxName(a) == ks.Name {
			out = append(out, types.NamespacedName{Namespace: a.Namespace, Name: a.Name})
		}
	}
	return out
}

// watch makes sure the Kustomizations of Tenant t are watched with cfg, the REST config of the
// client built for kubeconfig version v. A watch of an older version is replaced.
func (w *kustomizationWatches) watch(t types.NamespacedName, v tenant.SecretVersion, cfg *rest.Config) {
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
	w.watches[t] = &kustomizationWatch{version: v, cancel: cancel}
	go w.run(ctx, t, rest.CopyConfig(cfg))
}

// forget stops the watch of Tenant t (its client was dropped).
func (w *kustomizationWatches) forget(t types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.watches[t]; ok {
		old.cancel()
		delete(w.watches, t)
	}
}

func (w *kustomizationWatches) stopAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for t, old := range w.watches {
		old.cancel()
		delete(w.watches, t)
	}
	w.ctx = nil
}

// watching reports whether Tenant t's Kustomizations are watched.
func (w *kustomizationWatches) watching(t types.NamespacedName) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.watches[t]
	return ok
}

// run watches the Tenant's Kustomizations until ctx ends. A watch that cannot start (the Flux
// CRDs are not installed in the vCluster yet, the vCluster does not answer) or that ends before
// ctx is started again with the app's backoff (retryBase, doubling up to retryMax), with a fresh
// cache and REST mapper each time, so that CRDs installed later are found; the poll covers the
// time in between.
func (w *kustomizationWatches) run(ctx context.Context, t types.NamespacedName, cfg *rest.Config) {
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "kubeoperaapp", "tenant", t.String())
	delay := w.retryBase
	for {
		err := w.watchOnce(ctx, t, cfg)
		if ctx.Err() != nil {
			return
		}
		log.Error(err, "Cannot watch the vCluster's Kustomizations; Synced is polled until the watch starts", "retryIn", delay)
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

// watchOnce starts a label-selected cache of the Tenant's Kustomizations and feeds its events to
// the controller until ctx ends (nil) or the cache fails (its error).
func (w *kustomizationWatches) watchOnce(ctx context.Context, t types.NamespacedName, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	// The cache's requests must not be cut by the per-request timeout of the reconciler's
	// client: a watch is one long request.
	cfg.Timeout = 0
	// A transport of its own (a dialer of its own keeps client-go's TLS cache from sharing one)
	// whose connections are all closed when the watch stops, idle or not (a watch stream that
	// ended a moment ago may not count as idle yet): a dropped Tenant keeps no connection of the
	// operator open (internal/tenant.Clients closes its clients' idle connections likewise).
	conns := &trackedDialer{d: &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}, open: map[net.Conn]struct{}{}}
	defer conns.closeAll()
	cfg.Dial = conns.DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("build the HTTP client: %w", err)
	}
	defer utilnet.CloseIdleConnectionsFor(hc.Transport)
	c, err := cache.New(cfg, cache.Options{
		HTTPClient: hc,
		Scheme:     w.scheme,
		ByObject: map[client.Object]cache.ByObject{
			&kustomizev1.Kustomization{}: {Label: labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedBy})},
		},
	})
	if err != nil {
		return fmt.Errorf("build the cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, &kustomizev1.Kustomization{}, cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("start the Kustomization informer: %w", err)
	}
	enqueue := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		ks, ok := obj.(*kustomizev1.Kustomization)
		if !ok {
			return
		}
		for _, app := range w.appsOf(ctx, t, client.ObjectKeyFromObject(ks)) {
			obj := &kubeoperav1alpha1.KubeOperaApp{}
			obj.Namespace, obj.Name = app.Namespace, app.Name
			select {
			case w.events <- event.TypedGenericEvent[*kubeoperav1alpha1.KubeOperaApp]{Object: obj}:
			case <-ctx.Done():
				return
			}
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			if kustomizationChanged(oldObj, newObj) {
				enqueue(newObj)
			}
		},
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("add the event handler: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("run the cache: %w", err)
	}
	if ctx.Err() == nil {
		return errors.New("the cache stopped")
	}
	return nil
}

// kustomizationChanged: an update worth a pass changes the status or the spec (generation);
// resyncs and metadata-only updates are not.
func kustomizationChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*kustomizev1.Kustomization)
	n, ok2 := newObj.(*kustomizev1.Kustomization)
	if !ok1 || !ok2 {
		return true
	}
	return o.Generation != n.Generation || !equality.Semantic.DeepEqual(o.Status, n.Status)
}

// WatchesKustomizations reports whether the Kustomizations of Tenant namespace/name are watched;
// tests use it to prove a watch stops with its client.
func (r *Reconciler) WatchesKustomizations(namespace, name string) bool {
	return r.kustomizations.watching(types.NamespacedName{Namespace: namespace, Name: name})
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
