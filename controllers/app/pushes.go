package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// A pass does not wait for its push. commitManifests submits the app's folder to the Git writer
// (gitops.Writer.Submit) and, while the batch holding it is queued or being pushed, ends the pass
// with a hand-off (outcome.Pending): no status write, no requeue, the worker is free for other
// apps. When the batch is pushed or fails, the writer calls back and the app is added to the workqueue; that
// next pass submits nothing new (the same content is pending or done), reads the outcome and goes
// on from there (status commit, vCluster, Flux), or reports the failure as a synchronous write
// did. The removal of a folder (a deleted app, the old folder of a move) goes the same way: a
// deletion pass ends while it is pending, and a move's pass writes its status, Ready still
// progressing. pushes records, per app and folder, the submitted change and its handle. It lives
// in memory: after a restart every app is reconciled again and submits again (the writer commits
// nothing for files already on the branch, and removes nothing that is not there).

// pushes are the apps' submitted Git writes whose outcome a later pass reads, per app and
// folder (repository, branch and path: an app may write its folder and remove an old one, or
// remove two, in one pass).
type pushes struct {
	mu    sync.Mutex
	byApp map[types.NamespacedName]map[string]*push
	// queue is the controller's workqueue (set when its source starts, see start).
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[reconcile.Request]]
}

// push is one submitted write: what was submitted (fingerprint) and its handle.
type push struct {
	fingerprint string
	pending     *gitops.Pending
}

func newPushes() *pushes {
	return &pushes{byApp: map[types.NamespacedName]map[string]*push{}}
}

// start is the controller source that hands pushes the workqueue; it adds nothing itself.
func (p *pushes) start(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	p.queue.Store(&q)
	return nil
}

// submitted returns the app's write to folder with this fingerprint, nil when there is none
// (never submitted, outcome already read, or superseded by other content).
func (p *pushes) submitted(app types.NamespacedName, folder, fingerprint string) *gitops.Pending {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.byApp[app][folder]; e != nil && e.fingerprint == fingerprint {
		return e.pending
	}
	return nil
}

// record keeps the app's newly submitted write to folder (replacing an older one there).
func (p *pushes) record(app types.NamespacedName, folder, fingerprint string, pending *gitops.Pending) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byApp[app] == nil {
		p.byApp[app] = map[string]*push{}
	}
	p.byApp[app][folder] = &push{fingerprint: fingerprint, pending: pending}
}

// forgetFolder drops the app's write to folder: its outcome was read.
func (p *pushes) forgetFolder(app types.NamespacedName, folder string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byApp[app], folder)
	if len(p.byApp[app]) == 0 {
		delete(p.byApp, app)
	}
}

// forget drops every write of the app: the app is gone, or its outcomes were all read.
func (p *pushes) forget(app types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byApp, app)
}

// outstanding reports whether the app has a write whose outcome no pass has read yet.
func (p *pushes) outstanding(app types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byApp[app]) > 0
}

// folderOf names the folder a change writes or removes, for pushes.
func folderOf(repo gitops.Repo, c gitops.Change) string {
	return location{url: repo.URL, branch: repo.Branch, path: c.Path}.folder()
}

// forgetRead drops the outcomes the pass read (scope.outcomesRead): its status, which records
// them, was written.
func (p *pushes) forgetRead(s *scope) {
	for _, folder := range s.outcomesRead {
		p.forgetFolder(s.key, folder)
	}
}

// done is the writer's callback: the app's next pass reads the outcome. It runs on the writer's
// goroutine and never blocks (the workqueue's Add does not).
func (p *pushes) done(app types.NamespacedName) {
	if q := p.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: app})
	}
}

// whenFreed adds the app to the workqueue once freed is closed: a branch another batch held when
// the app's pass needed it is free again. The goroutine ends with the batch (bounded by the Git
// writer's timeout).
func (p *pushes) whenFreed(app types.NamespacedName, freed <-chan struct{}) {
	go func() {
		<-freed
		p.done(app)
	}()
}

// fingerprint identifies the content of a write: repository, branch, folder, owner and files.
// A pass that renders the same fingerprint as the pending write submits nothing new.
func fingerprint(repo gitops.Repo, c gitops.Change) string {
	h := sha256.New()
	field := func(s string) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	field(repo.URL)
	field(repo.Branch)
	field(c.Path)
	field(c.Owner.ID)
	field(c.Owner.Name)
	if c.Delete {
		field("delete")
	}
	if c.CreateBranch {
		field("create-branch")
	}
	names := make([]string, 0, len(c.Files))
	for name := range c.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		field(name)
		h.Write(c.Files[name])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// pendingAwareLimiter is the per-app rate limiter that keeps an app's failure count while its
// push is pending: controller-runtime forgets an item after every pass that returns no error,
// and the pass that submits a push returns none. Without this, a push that fails again and again
// would be retried after RetryBase each time instead of backing off.
type pendingAwareLimiter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	pushes *pushes
}

func (l pendingAwareLimiter) Forget(item reconcile.Request) {
	if l.pushes.outstanding(item.NamespacedName) {
		return
	}
	l.TypedRateLimiter.Forget(item)
}

// announceChange is the last predicate of the app watch; it passes every event the others
// passed. An app that is created or whose spec changed is about to submit a change to its
// branch: it is announced to the Git writer (gitops.Writer.Expect), whose batching window for
// that branch then waits for it, so a burst of apps over many repositories (a restart, a bulk
// apply) shares one push per repository even when one repository's changes reach the writer
// further apart than a window. The pass withdraws the announcement when it ends (Reconcile),
// and submitting settles it.
func (r *Reconciler) announceChange() predicate.Funcs {
	announce := func(o client.Object) bool {
		app, ok := o.(*kubeoperav1alpha1.KubeOperaApp)
		if ok && app.DeletionTimestamp.IsZero() {
			r.writer.Expect(gitops.Repo{URL: app.Spec.Git.URL, Branch: render.Branch(app)},
				types.NamespacedName{Namespace: app.Namespace, Name: app.Name}.String())
		}
		return true
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return announce(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return announce(e.ObjectNew) },
	}
}
