package controllers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
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

var secretGVK = corev1.SchemeGroupVersion.WithKind("Secret")

// scopedSecrets is the manager's cache with Secret metadata scoped as described above.
type scopedSecrets struct {
	cache.Cache
	newNamespaceCache func(ns string) (cache.Cache, error)
	live              client.Reader
	// holders are the kinds whose objects make their namespace's Secrets watched.
	holders []client.Object

	mu       sync.Mutex
	ctx      context.Context
	spaces   map[string]*secretSpace
	handlers []*fanoutRegistration
	fanout   *secretFanout
}

// secretSpace is the Secret informer of one namespace.
type secretSpace struct {
	holders  map[types.UID]bool
	cache    cache.Cache
	informer cache.Informer
	cancel   context.CancelFunc
	// regs are the registrations of the fan-out's handlers on this informer.
	regs map[*fanoutRegistration]toolscache.ResourceEventHandlerRegistration
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
		s := &scopedSecrets{Cache: delegate, live: live, holders: holders, spaces: map[string]*secretSpace{}}
		s.fanout = &secretFanout{s: s}
		s.newNamespaceCache = func(ns string) (cache.Cache, error) {
			return cache.New(cfg, cache.Options{
				HTTPClient:        opts.HTTPClient,
				Scheme:            opts.Scheme,
				Mapper:            opts.Mapper,
				DefaultNamespaces: map[string]cache.Config{ns: {}},
				ByObject:          map[client.Object]cache.ByObject{&corev1.Secret{}: {Transform: trimSecretMetadata}},
			})
		}
		return s, nil
	}
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
			ctrl.Log.WithName("cache").Error(err, "Cannot watch the Secrets of a namespace; they are read from the API server", "namespace", ns)
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

// startSpace starts the Secret informer of ns with every registered handler. Callers hold s.mu.
func (s *scopedSecrets) startSpace(ns string) (*secretSpace, error) {
	if s.ctx == nil || s.ctx.Err() != nil {
		return nil, errors.New("the cache is not running")
	}
	c, err := s.newNamespaceCache(ns)
	if err != nil {
		return nil, err
	}
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(secretGVK)
	ctx, cancel := context.WithCancel(s.ctx)
	inf, err := c.GetInformer(ctx, meta, cache.BlockUntilSynced(false))
	if err != nil {
		cancel()
		return nil, err
	}
	sp := &secretSpace{holders: map[types.UID]bool{}, cache: c, informer: inf, cancel: cancel,
		regs: map[*fanoutRegistration]toolscache.ResourceEventHandlerRegistration{}}
	for _, h := range s.handlers {
		reg, err := inf.AddEventHandlerWithOptions(h.handler, h.options)
		if err != nil {
			cancel()
			return nil, err
		}
		sp.regs[h] = reg
	}
	go func() {
		if err := c.Start(ctx); err != nil {
			ctrl.Log.WithName("cache").Error(err, "Secret informer of a namespace stopped", "namespace", ns)
		}
	}()
	return sp, nil
}

// synced returns the informer cache of ns when it is running and synced.
func (s *scopedSecrets) synced(ns string) cache.Cache {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sp := s.spaces[ns]; sp != nil && sp.informer.HasSynced() {
		return sp.cache
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
	if c := s.synced(key.Namespace); c != nil {
		return c.Get(ctx, key, obj, opts...)
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
	if c := s.synced(lo.Namespace); lo.Namespace != "" && c != nil {
		return c.List(ctx, list, opts...)
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

// secretFanout is the Secret metadata informer the controllers see: its handlers are added to
// every namespace's informer, now and when one starts.
type secretFanout struct{ s *scopedSecrets }

// fanoutRegistration is one handler of the fan-out.
type fanoutRegistration struct {
	s       *scopedSecrets
	handler toolscache.ResourceEventHandler
	options toolscache.HandlerOptions
}

// HasSynced: every namespace informer running now delivered its initial list to this handler.
func (r *fanoutRegistration) HasSynced() bool {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	for _, sp := range r.s.spaces {
		if reg := sp.regs[r]; reg != nil && !reg.HasSynced() {
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

func (f *secretFanout) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return f.AddEventHandlerWithOptions(h, toolscache.HandlerOptions{ResyncPeriod: &resync})
}

func (f *secretFanout) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	reg := &fanoutRegistration{s: s, handler: h, options: o}
	for _, sp := range s.spaces {
		r, err := sp.informer.AddEventHandlerWithOptions(h, o)
		if err != nil {
			return nil, err
		}
		sp.regs[reg] = r
	}
	s.handlers = append(s.handlers, reg)
	return reg, nil
}

func (f *secretFanout) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	s := f.s
	reg, ok := handle.(*fanoutRegistration)
	if !ok {
		return fmt.Errorf("not a registration of the Secret fan-out: %T", handle)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range s.spaces {
		if r := sp.regs[reg]; r != nil {
			if err := sp.informer.RemoveEventHandler(r); err != nil {
				return err
			}
			delete(sp.regs, reg)
		}
	}
	for i, h := range s.handlers {
		if h == reg {
			s.handlers = append(s.handlers[:i], s.handlers[i+1:]...)
			break
		}
	}
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
