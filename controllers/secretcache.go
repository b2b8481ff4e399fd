package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Secrets by namespace (docs/benchmarks.md, "Cache scope"). The metadata of Secrets is watched
// only in the namespaces that hold a ControlPlane or a KubeOperaApp: every Secret the reconcilers
// react to (generated ones, bootstrap password, bring-your-own TLS, Git, registry, Tenant
// kubeconfig) lives beside the object that references it, so the Secrets of every other
// namespace are neither listed nor watched. scopedSecrets wraps the manager's cache: a
// metadata-only Secret informer handed to a controller is a fan-out over one informer per such
// namespace, started when the first ControlPlane or app appears there and stopped when the last
// one goes; a Get or List of Secret metadata in a namespace whose informer has not synced reads
// the API server (trimmed the same way). Everything else goes to the manager's cache unchanged.
//
// Memory (measured with test/bench -heap-profile at 100 ControlPlanes): each namespace costs one
// client-go SharedIndexInformer on the metadata client (one watch, one store of trimmed entries)
// and exactly one event handler on it, the dispatcher, which hands every event to every handler
// registered on the fan-out in turn. A whole controller-runtime cache per namespace, with each
// controller's handler added to each namespace's informer, cost a 16 KB handler buffer per
// handler and namespace (5.6 MB of live heap at 100 namespaces) besides its own informer map.
// A handler registered while namespaces are already watched is handed their stored Secrets as
// initial adds; it is registered with the dispatcher first, so an event arriving meanwhile may
// reach it twice but never not at all (the handlers enqueue requests: a duplicate is harmless).
//
// controller-runtime's cache options select a kind statically (namespaces, selectors): a
// cluster-wide metadata informer, the closest they allow, cost 18 MiB more RSS with 10,000
// unrelated Secrets (docs/architecture.md, "Cache scope and memory", has the measurements).

var (
	secretGVK = corev1.SchemeGroupVersion.WithKind("Secret")
	secretGVR = corev1.SchemeGroupVersion.WithResource("secrets")
)

// scopedSecrets is the manager's cache with Secret metadata scoped as described above.
type scopedSecrets struct {
	cache.Cache
	// newInformer returns the Secret metadata informer of a namespace (not started).
	newInformer func(ns string) (toolscache.SharedIndexInformer, error)
	live        client.Reader
	// holders are the kinds whose objects make their namespace's Secrets watched.
	holders []client.Object

	mu     sync.Mutex
	ctx    context.Context
	spaces map[string]*secretSpace
	fanout *secretFanout

	// hmu guards handlers, which the dispatchers read on every event.
	hmu      sync.RWMutex
	handlers []*fanoutRegistration
}

// secretSpace is the Secret informer of one namespace.
type secretSpace struct {
	holders  map[types.UID]bool
	informer toolscache.SharedIndexInformer
	// dispatch is the registration of the dispatcher, the informer's one handler.
	dispatch toolscache.ResourceEventHandlerRegistration
	cancel   context.CancelFunc
}

// newScopedSecretsCache returns the manager's NewCache: the default cache with Secret metadata
// scoped to the namespaces holding one of holders.
func newScopedSecretsCache(holders ...client.Object) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		delegate, err := cache.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		live, err := client.New(cfg, client.Options{HTTPClient: opts.HTTPClient, Scheme: opts.Scheme, Mapper: opts.Mapper})
		if err != nil {
			return nil, fmt.Errorf("create the Secret metadata reader: %w", err)
		}
		meta, err := metadata.NewForConfigAndClient(cfg, opts.HTTPClient)
		if err != nil {
			return nil, fmt.Errorf("create the Secret metadata client: %w", err)
		}
		s := &scopedSecrets{Cache: delegate, live: live, holders: holders, spaces: map[string]*secretSpace{}}
		s.fanout = &secretFanout{s: s}
		s.newInformer = func(ns string) (toolscache.SharedIndexInformer, error) {
			return newSecretMetadataInformer(meta.Resource(secretGVR).Namespace(ns))
		}
		return s, nil
	}
}

// newSecretMetadataInformer is an informer of the Secret metadata c lists and watches, trimmed
// by trimSecretMetadata, without resync or indexes.
func newSecretMetadataInformer(c metadata.ResourceInterface) (toolscache.SharedIndexInformer, error) {
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, o)
		},
	}
	inf := toolscache.NewSharedIndexInformer(lw, &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{})
	if err := inf.SetTransform(func(in any) (any, error) {
		out, err := trimSecretMetadata(in)
		if m, ok := out.(*metav1.PartialObjectMetadata); ok {
			m.SetGroupVersionKind(secretGVK)
		}
		return out, err
	}); err != nil {
		return nil, err
	}
	return inf, nil
}

// isSecretMetadata: obj is Secret metadata (the metadata-only informer's type) or a list of it.
func isSecretMetadata(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *metav1.PartialObjectMetadata:
		return o.GroupVersionKind() == secretGVK
	case *metav1.PartialObjectMetadataList:
		return o.GroupVersionKind() == secretGVK.GroupVersion().WithKind("SecretList") || o.GroupVersionKind() == secretGVK
	}
	return false
}

// Start starts the manager's cache and follows the holders to start and stop the per-namespace
// Secret informers.
func (s *scopedSecrets) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	for _, h := range s.holders {
		inf, err := s.Cache.GetInformer(ctx, h, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watch %T for the Secret scope: %w", h, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { s.holder(obj, true) },
			UpdateFunc: func(_, obj any) { s.holder(obj, true) },
			DeleteFunc: func(obj any) { s.holder(obj, false) },
		}); err != nil {
			return fmt.Errorf("watch %T for the Secret scope: %w", h, err)
		}
	}
	err := s.Cache.Start(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for ns, sp := range s.spaces {
		sp.cancel()
		delete(s.spaces, ns)
	}
	return err
}

// holder records that obj (a ControlPlane or an app) exists or is gone.
func (s *scopedSecrets) holder(obj any, present bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	ns := o.GetNamespace()
	s.mu.Lock()
	defer s.mu.Unlock()
	sp := s.spaces[ns]
	switch {
	case present && sp == nil:
		sp, err := s.startSpace(ns)
		if err != nil {
			ctrl.Log.WithName("cache").Error(err, "Cannot watch the Secrets of a namespace; they are read from the API server", "Namespace", klog.KRef("", ns))
			return
		}
		sp.holders[o.GetUID()] = true
		s.spaces[ns] = sp
	case present:
		sp.holders[o.GetUID()] = true
	case sp != nil:
		delete(sp.holders, o.GetUID())
		if len(sp.holders) == 0 {
			sp.cancel()
			delete(s.spaces, ns)
		}
	}
}

// startSpace starts the Secret informer of ns with the dispatcher. Callers hold s.mu.
func (s *scopedSecrets) startSpace(ns string) (*secretSpace, error) {
	if s.ctx == nil || s.ctx.Err() != nil {
		return nil, errors.New("the cache is not running")
	}
	inf, err := s.newInformer(ns)
	if err != nil {
		return nil, err
	}
	reg, err := inf.AddEventHandler(dispatcher{s})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	go inf.RunWithContext(ctx)
	return &secretSpace{holders: map[types.UID]bool{}, informer: inf, dispatch: reg, cancel: cancel}, nil
}

// dispatcher is the one handler of every namespace's informer: it hands each event to the
// fan-out's handlers.
type dispatcher struct{ s *scopedSecrets }

func (d dispatcher) current() []*fanoutRegistration {
	d.s.hmu.RLock()
	defer d.s.hmu.RUnlock()
	return d.s.handlers
}

func (d dispatcher) OnAdd(obj any, initial bool) {
	for _, h := range d.current() {
		h.handler.OnAdd(obj, initial)
	}
}

func (d dispatcher) OnUpdate(old, obj any) {
	for _, h := range d.current() {
		h.handler.OnUpdate(old, obj)
	}
}

func (d dispatcher) OnDelete(obj any) {
	for _, h := range d.current() {
		h.handler.OnDelete(obj)
	}
}

// synced returns the store of ns when its informer is running and synced.
func (s *scopedSecrets) synced(ns string) toolscache.Indexer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.spaces[ns]; sp != nil && sp.informer.HasSynced() {
		return sp.informer.GetIndexer()
	}
	return nil
}

// GetInformer hands out the fan-out for Secret metadata, the manager's informer otherwise.
func (s *scopedSecrets) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if isSecretMetadata(obj) {
		return s.fanout, nil
	}
	return s.Cache.GetInformer(ctx, obj, opts...)
}

// Get reads Secret metadata from its namespace's informer, or from the API server.
func (s *scopedSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if !isSecretMetadata(obj) {
		return s.Cache.Get(ctx, key, obj, opts...)
	}
	if store := s.synced(key.Namespace); store != nil {
		item, ok, err := store.GetByKey(key.Namespace + "/" + key.Name)
		if err != nil {
			return err
		}
		if !ok {
			return apierrors.NewNotFound(secretGVR.GroupResource(), key.Name)
		}
		return copyMetadata(item, obj)
	}
	if err := s.live.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	_, err := trimSecretMetadata(obj)
	return err
}

// List lists Secret metadata of one namespace from its informer, else from the API server.
func (s *scopedSecrets) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if !isSecretMetadata(list) {
		return s.Cache.List(ctx, list, opts...)
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if store := s.synced(lo.Namespace); lo.Namespace != "" && store != nil {
		return listStore(store, lo, list)
	}
	if err := s.live.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*metav1.PartialObjectMetadataList); ok {
		for i := range l.Items {
			if _, err := trimSecretMetadata(&l.Items[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyMetadata copies a stored entry into obj (Secret metadata).
func copyMetadata(item any, obj client.Object) error {
	m, ok := item.(*metav1.PartialObjectMetadata)
	out, isMeta := obj.(*metav1.PartialObjectMetadata)
	if !ok || !isMeta {
		return fmt.Errorf("the Secret metadata store holds %T, asked for %T", item, obj)
	}
	m.DeepCopyInto(out)
	out.SetGroupVersionKind(secretGVK)
	return nil
}

// listStore lists the entries of store that match lo into list. The entries are trimmed: a label
// selector matches none that needs labels (no handler lists them by label).
func listStore(store toolscache.Store, lo *client.ListOptions, list client.ObjectList) error {
	l, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok {
		return fmt.Errorf("the Secret metadata store lists into %T", list)
	}
	l.Items = nil
	for _, item := range store.List() {
		m, ok := item.(*metav1.PartialObjectMetadata)
		if !ok {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(m.Labels)) {
			continue
		}
		if lo.FieldSelector != nil && !lo.FieldSelector.Matches(fields.Set{"metadata.name": m.Name, "metadata.namespace": m.Namespace}) {
			continue
		}
		l.Items = append(l.Items, *m.DeepCopy())
	}
	return nil
}

// secretFanout is the Secret metadata informer the controllers see: its handlers are added to
// every namespace's informer, now and when one starts.
type secretFanout struct{ s *scopedSecrets }

// fanoutRegistration is one handler of the fan-out.
type fanoutRegistration struct {
	s       *scopedSecrets
	handler toolscache.ResourceEventHandler
}

// HasSynced: every namespace informer running now delivered its initial list to the
// dispatcher, and so to this handler (the stored entries were handed to it when it registered).
func (r *fanoutRegistration) HasSynced() bool {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	for _, sp := range r.s.spaces {
		if !sp.dispatch.HasSynced() {
			return false
		}
	}
	return true
}

func (r *fanoutRegistration) HasSyncedChecker() toolscache.DoneChecker {
	return newPollChecker("Secret metadata handler", r.s, r.HasSynced)
}

func (f *secretFanout) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

func (f *secretFanout) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, _ time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{})
}

// AddEventHandlerWithOptions registers h with the dispatchers, then hands it the Secrets the
// running informers already hold. The informers never resync, so a resync period is ignored.
func (f *secretFanout) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, _ toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	s := f.s
	reg := &fanoutRegistration{s: s, handler: h}
	s.hmu.Lock()
	s.handlers = append(append([]*fanoutRegistration(nil), s.handlers...), reg)
	s.hmu.Unlock()
	s.mu.Lock()
	stores := make([]toolscache.Store, 0, len(s.spaces))
	for _, sp := range s.spaces {
		stores = append(stores, sp.informer.GetStore())
	}
	s.mu.Unlock()
	for _, st := range stores {
		for _, item := range st.List() {
			h.OnAdd(item, true)
		}
	}
	return reg, nil
}

func (f *secretFanout) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	s := f.s
	reg, ok := handle.(*fanoutRegistration)
	if !ok {
		return fmt.Errorf("not a registration of the Secret fan-out: %T", handle)
	}
	s.hmu.Lock()
	defer s.hmu.Unlock()
	handlers := make([]*fanoutRegistration, 0, len(s.handlers))
	for _, h := range s.handlers {
		if h != reg {
			handlers = append(handlers, h)
		}
	}
	s.handlers = handlers
	return nil
}

// AddIndexers is refused: no index is kept on Secrets (the informers come and go).
func (f *secretFanout) AddIndexers(toolscache.Indexers) error {
	return errors.New("the Secret metadata informer is scoped by namespace and keeps no indexes")
}

func (f *secretFanout) HasSynced() bool {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.spaces {
		if !sp.informer.HasSynced() {
			return false
		}
	}
	return true
}

func (f *secretFanout) HasSyncedChecker() toolscache.DoneChecker {
	return newPollChecker("Secret metadata informers", f.s, f.HasSynced)
}

func (f *secretFanout) IsStopped() bool {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx != nil && s.ctx.Err() != nil
}

// pollChecker turns a HasSynced function into a DoneChecker: the namespace informers behind the
// fan-out come and go, so there is no single channel to hand out. Its channel closes when synced
// reports true (checked every 50ms) or never, when the cache stops first.
type pollChecker struct {
	name   string
	s      *scopedSecrets
	synced func() bool
	once   sync.Once
	done   chan struct{}
}

func newPollChecker(name string, s *scopedSecrets, synced func() bool) *pollChecker {
	return &pollChecker{name: name, s: s, synced: synced, done: make(chan struct{})}
}

func (p *pollChecker) Name() string { return p.name }

func (p *pollChecker) Done() <-chan struct{} {
	p.once.Do(func() {
		go func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for !p.synced() {
				p.s.mu.Lock()
				ctx := p.s.ctx
				p.s.mu.Unlock()
				if ctx == nil {
					ctx = context.Background()
				}
				select {
				case <-t.C:
				case <-ctx.Done():
					return
				}
			}
			close(p.done)
		}()
	})
	return p.done
}
