package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fluxPlayer plays source-controller and kustomize-controller for P5, where 100 vClusters' Flux
// cannot run on two cores: for every Kustomization of the API server it writes the status
// kustomize-controller writes, in its order. A reconcile first marks the Kustomization
// Reconciling and Ready=Unknown (reason Progressing, "Reconciliation in progress"), then reads
// the head of the GitRepository's branch on the Git server (source-controller's fetch; read from
// the server's repository on disk, so it is not one of the Git requests the proxy counts) and,
// when spec.path exists there, writes Ready=True (ReconciliationSucceeded, "Applied revision:
// <branch>@sha1:<commit>"), Healthy=True, lastAppliedRevision, lastAttemptedRevision and
// observedGeneration; when the path is missing, Ready=False (BuildFailed) and the attempted
// revision. It applies nothing: no Deployment is created in the vCluster (the operator's
// Synced reads Flux's status, not the workload's).
//
// It reconciles a Kustomization when it is created or its spec changes, when its GitRepository
// is created (a Kustomization made first found no source artifact), when the operator pushes
// to its repository (the notification-controller Receiver on a push webhook, as P1's
// requestReconcile), and every interval after its last reconcile: the played spec.interval (1
// minute of Flux is played in interval). Four workers, kustomize-controller's default
// --concurrent.
type fluxPlayer struct {
	c        client.Client
	cache    cache.Cache
	git      *gitSide
	interval time.Duration
	queue    workqueue.TypedDelayingInterface[types.NamespacedName]

	mu    sync.Mutex
	repos map[string]*git.Repository // repository name → the server's repository
	// applied records the revisions each Kustomization reported applied.
	applied map[string]bool // "<ns>/<name>@<revision>"
	// reconciles counts the Kustomization reconciles played (each writes the status twice).
	reconciles atomic.Int64
}

func startFluxPlayer(ctx context.Context, cfg *rest.Config, g *gitSide, interval time.Duration) (*fluxPlayer, error) {
	c, ca, err := clientAndCache(cfg)
	if err != nil {
		return nil, err
	}
	p := &fluxPlayer{
		c: c, cache: ca, git: g, interval: interval,
		queue:   workqueue.NewTypedDelayingQueue[types.NamespacedName](),
		repos:   map[string]*git.Repository{},
		applied: map[string]bool{},
	}
	inf, err := ca.GetInformer(ctx, &kustomizev1.Kustomization{})
	if err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { p.enqueue(o) },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*kustomizev1.Kustomization)
			n, ok2 := newObj.(*kustomizev1.Kustomization)
			if ok1 && ok2 && o.Generation != n.Generation {
				p.enqueue(n)
			}
		},
	}); err != nil {
		return nil, err
	}
	// kustomize-controller watches its sources: a GitRepository whose artifact appears (here:
	// its creation, the player's source-controller having nothing else to wait for) reconciles
	// the Kustomizations that use it, so one created first does not wait for its interval.
	ginf, err := ca.GetInformer(ctx, &sourcev1.GitRepository{})
	if err != nil {
		return nil, err
	}
	if _, err := ginf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if gr, ok := o.(*sourcev1.GitRepository); ok {
			p.sourceReady(ctx, gr)
		}
	}}); err != nil {
		return nil, err
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return nil, errors.New("the Flux player's cache did not sync")
	}
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for range 4 {
		go p.work(ctx)
	}
	go p.receiver(ctx)
	return p, nil
}

func (p *fluxPlayer) enqueue(o any) {
	if k, ok := o.(*kustomizev1.Kustomization); ok {
		p.queue.Add(types.NamespacedName{Namespace: k.Namespace, Name: k.Name})
	}
}

// receiver reconciles, after each push of the operator, the Kustomizations of that repository.
func (p *fluxPlayer) receiver(ctx context.Context) {
	events, next := p.git.proxy.snapshot()
	seen := len(events)
	for {
		select {
		case <-ctx.Done():
			return
		case <-next:
		}
		events, next = p.git.proxy.snapshot()
		pushed := map[string]bool{}
		for _, e := range events[seen:] {
			if e.push && e.operator {
				pushed[e.repo] = true
			}
		}
		seen = len(events)
		if len(pushed) > 0 {
			p.pushedTo(ctx, pushed)
		}
	}
}

// pushedTo reconciles the Kustomizations whose GitRepository is one of repos, as the Receiver
// does on a push webhook (for any pusher: the receiver above calls it for the operator's pushes,
// the shared-branch phase for a commit pushed by someone else).
func (p *fluxPlayer) pushedTo(ctx context.Context, repos map[string]bool) {
	var list kustomizev1.KustomizationList
	if err := p.cache.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		k := &list.Items[i]
		if repo, _, err := p.source(ctx, k); err == nil && repos[repo] {
			p.queue.Add(types.NamespacedName{Namespace: k.Namespace, Name: k.Name})
		}
	}
}

// sourceReady reconciles the Kustomizations whose source is gr.
func (p *fluxPlayer) sourceReady(ctx context.Context, gr *sourcev1.GitRepository) {
	var list kustomizev1.KustomizationList
	if err := p.cache.List(ctx, &list); err != nil {
		return
	}
	for i := range list.Items {
		k := &list.Items[i]
		ns := k.Spec.SourceRef.Namespace
		if ns == "" {
			ns = k.Namespace
		}
		if k.Spec.SourceRef.Kind == sourcev1.GitRepositoryKind && ns == gr.Namespace && k.Spec.SourceRef.Name == gr.Name {
			p.queue.Add(types.NamespacedName{Namespace: k.Namespace, Name: k.Name})
		}
	}
}

func (p *fluxPlayer) work(ctx context.Context) {
	for {
		key, shutdown := p.queue.Get()
		if shutdown {
			return
		}
		if err := p.reconcile(ctx, key); err != nil && ctx.Err() == nil {
			progress("  flux player: %s: %v", key, err)
		}
		p.queue.Done(key)
		if ctx.Err() == nil {
			p.queue.AddAfter(key, p.interval)
		}
	}
}

// source returns the repository name (on the Git server) and branch of k's GitRepository.
func (p *fluxPlayer) source(ctx context.Context, k *kustomizev1.Kustomization) (repo, branch string, err error) {
	ns := k.Spec.SourceRef.Namespace
	if ns == "" {
		ns = k.Namespace
	}
	gr := &sourcev1.GitRepository{}
	if err := p.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: k.Spec.SourceRef.Name}, gr); err != nil {
		return "", "", err
	}
	u, err := url.Parse(gr.Spec.URL)
	if err != nil {
		return "", "", err
	}
	branch = "main"
	if gr.Spec.Reference != nil && gr.Spec.Reference.Branch != "" {
		branch = gr.Spec.Reference.Branch
	}
	return strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git"), branch, nil
}

// head returns the branch head of repo and whether dir exists there.
func (p *fluxPlayer) head(repo, branch, dir string) (string, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock() // go-git's filesystem storage is read one reconcile at a time
	r, ok := p.repos[repo]
	if !ok {
		var err error
		if r, err = git.PlainOpen(filepath.Join(p.git.srv.Root(), repo+".git")); err != nil {
			return "", false, err
		}
		p.repos[repo] = r
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return "", false, err
	}
	c, err := r.CommitObject(ref.Hash())
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		// An open repository does not see packs written after it listed them: open it again.
		if r, err = git.PlainOpen(filepath.Join(p.git.srv.Root(), repo+".git")); err != nil {
			return "", false, err
		}
		p.repos[repo] = r
		c, err = r.CommitObject(ref.Hash())
	}
	if err != nil {
		return "", false, err
	}
	tree, err := c.Tree()
	if err != nil {
		return "", false, err
	}
	_, err = tree.FindEntry(strings.TrimPrefix(dir, "./"))
	return ref.Hash().String(), err == nil, nil
}

func (p *fluxPlayer) reconcile(ctx context.Context, key types.NamespacedName) error {
	k := &kustomizev1.Kustomization{}
	if err := p.cache.Get(ctx, key, k); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !k.DeletionTimestamp.IsZero() {
		return nil
	}
	p.reconciles.Add(1)
	// Start of a reconcile: Reconciling, Ready=Unknown.
	before := k.DeepCopy()
	apimeta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: meta.ReconcilingCondition, Status: metav1.ConditionTrue,
		Reason: meta.ProgressingReason, Message: "Reconciliation in progress", ObservedGeneration: k.Generation})
	apimeta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionUnknown,
		Reason: meta.ProgressingReason, Message: "Reconciliation in progress", ObservedGeneration: k.Generation})
	if err := p.c.Status().Patch(ctx, k, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("mark progressing: %w", err)
	}
	before = k.DeepCopy()
	repo, branch, err := p.source(ctx, k)
	var sha string
	var found bool
	if err == nil {
		sha, found, err = p.head(repo, branch, k.Spec.Path)
	}
	apimeta.RemoveStatusCondition(&k.Status.Conditions, meta.ReconcilingCondition)
	switch {
	case err != nil:
		apimeta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionFalse,
			Reason: meta.ArtifactFailedReason, Message: "Source artifact not found, retrying", ObservedGeneration: k.Generation})
	case !found:
		revision := branch + "@sha1:" + sha
		k.Status.LastAttemptedRevision = revision
		apimeta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionFalse,
			Reason: meta.BuildFailedReason, Message: fmt.Sprintf("kustomization path not found: %s", k.Spec.Path), ObservedGeneration: k.Generation})
	default:
		revision := branch + "@sha1:" + sha
		k.Status.LastAttemptedRevision = revision
		k.Status.LastAppliedRevision = revision
		k.Status.ObservedGeneration = k.Generation
		apimeta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: meta.HealthyCondition, Status: metav1.ConditionTrue,
			Reason: meta.SucceededReason, Message: "Health check passed", ObservedGeneration: k.Generation})
		apimeta.SetStatusCondition(&k.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition, Status: metav1.ConditionTrue,
			Reason: meta.ReconciliationSucceededReason, Message: "Applied revision: " + revision, ObservedGeneration: k.Generation})
	}
	if err := p.c.Status().Patch(ctx, k, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("write the outcome: %w", err)
	}
	if k.Status.LastAppliedRevision != "" {
		id := key.String() + "@" + k.Status.LastAppliedRevision
		p.mu.Lock()
		p.applied[id] = true
		p.mu.Unlock()
	}
	return nil
}

// hasApplied reports whether Kustomization key reported revision applied.
func (p *fluxPlayer) hasApplied(key types.NamespacedName, revision string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied[key.String()+"@"+revision]
}
