package app

// Kustomization events of Synced apps whose answer needs the Git writer's clone: see
// folderChecks.

import (
	"context"
	"errors"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

// folderQuestion asks whether the revision an app's Kustomization applied holds the app's
// folder as the app's commit does: a Synced app whose folder is the same there has nothing to
// do when Flux moves its Kustomization to a new head of a shared branch.
type folderQuestion struct {
	tenant types.NamespacedName
	// app is a copy of the app as the event found it (its status names commit and folder).
	app *kubeoperav1alpha1.KubeOperaApp
	loc location
	// own is the app's commit, applied the commit the Kustomization applied.
	own, applied string
	// busy counts the answers that found the clone in use.
	busy int
}

// folderQuestionOf returns the question an event of app's Kustomization obj asks; ok is false
// when the event is worth a pass without asking: the app is not Synced for its generation and
// commit, is being deleted, or the Kustomization is not Ready for its generation.
func folderQuestionOf(t types.NamespacedName, app *kubeoperav1alpha1.KubeOperaApp, obj client.Object) (folderQuestion, bool) {
	ks, ok := obj.(*kustomizev1.Kustomization)
	synced := findCondition(app, kubeoperav1alpha1.ConditionSynced)
	if !ok || synced == nil || synced.Status != metav1.ConditionTrue || synced.ObservedGeneration != app.Generation ||
		app.Status.Commit == "" || !app.DeletionTimestamp.IsZero() {
		return folderQuestion{}, false
	}
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue || ks.Status.ObservedGeneration != ks.Generation {
		return folderQuestion{}, false
	}
	loc := recordedLocation(app)
	applied := appliedCommit(ks.Status.LastAppliedRevision, loc.branch)
	if applied == "" {
		return folderQuestion{}, false
	}
	return folderQuestion{tenant: t, app: app, loc: loc, own: app.Status.Commit, applied: applied}, true
}

func (q *folderQuestion) key() types.NamespacedName {
	return types.NamespacedName{Namespace: q.app.Namespace, Name: q.app.Name}
}

// known answers q from what the Git writer holds without waiting or fetching
// (gitops.Writer.SameFolderKnown).
func (r *Reconciler) known(q *folderQuestion) (same, known bool, freed <-chan struct{}) {
	return r.writer.SameFolderKnown(gitops.Repo{URL: q.loc.url, Branch: q.loc.branch}, q.loc.path, q.own, q.applied)
}

// folderChecks answers, one branch at a time and off the watch, the folder questions the Git
// writer could not answer from its cache or its idle clone: the clone was in use (a batch or a
// lookup held it), or it lacks the applied commit (pushed by someone else: a person's commit,
// another writer). One goroutine per branch answers its questions in order: a commit the clone
// lacks is fetched once, with the credentials of the app that asked first (a lookup of the
// writer, gitops.Writer.SameFolder, bounded by its timeout), and every later question of the
// round reads the clone; a clone in use makes the round wait until it is free. An app whose
// folder changed, or whose question cannot be answered (the fetch failed, the commit is older
// than the writer fetches, the clone was in use maxBusyRechecks times), is offered to its
// Tenant's pacing: a pass decides. So a push that changes no app's folder costs one fetch, not a
// pass per app.
type folderChecks struct {
	mu sync.Mutex
	// pending holds, per branch with a running goroutine, the questions not yet taken, one per
	// app (a newer event's question replaces an older one).
	pending map[branchKey]*questionQueue
}

type questionQueue struct {
	order []types.NamespacedName
	byApp map[types.NamespacedName]folderQuestion
}

func newFolderChecks() *folderChecks {
	return &folderChecks{pending: map[branchKey]*questionQueue{}}
}

// ask queues q for its branch's goroutine, starting it when none runs.
func (r *Reconciler) ask(ctx context.Context, q folderQuestion) {
	c := r.folderChecks
	c.mu.Lock()
	branch := q.loc.branchKey()
	qq, running := c.pending[branch]
	if !running {
		qq = &questionQueue{byApp: map[types.NamespacedName]folderQuestion{}}
		c.pending[branch] = qq
	}
	qq.put(q, false)
	c.mu.Unlock()
	if !running {
		go r.answer(ctx, branch)
	}
}

// put adds q; with older, only when no question of its app is queued (a question taken back
// after a busy round is older than one queued meanwhile).
func (qq *questionQueue) put(q folderQuestion, older bool) {
	k := q.key()
	if _, ok := qq.byApp[k]; ok {
		if !older {
			qq.byApp[k] = q
		}
		return
	}
	qq.order = append(qq.order, k)
	qq.byApp[k] = q
}

// take returns the branch's queued questions and empties its queue; when none is queued it ends
// the branch's goroutine (nil).
func (c *folderChecks) take(branch branchKey) []folderQuestion {
	c.mu.Lock()
	defer c.mu.Unlock()
	qq := c.pending[branch]
	if len(qq.order) == 0 {
		delete(c.pending, branch)
		return nil
	}
	out := make([]folderQuestion, 0, len(qq.order))
	for _, k := range qq.order {
		out = append(out, qq.byApp[k])
	}
	qq.order, qq.byApp = nil, map[types.NamespacedName]folderQuestion{}
	return out
}

// putBack queues again the questions a busy clone left unanswered.
func (c *folderChecks) putBack(branch branchKey, qs []folderQuestion) {
	c.mu.Lock()
	defer c.mu.Unlock()
	qq := c.pending[branch]
	for _, q := range qs {
		qq.put(q, true)
	}
}

// forget drops a branch's questions when the manager stops.
func (c *folderChecks) forget(branch branchKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, branch)
}

// answer is the goroutine of one branch (folderChecks).
func (r *Reconciler) answer(ctx context.Context, branch branchKey) {
	for {
		qs := r.folderChecks.take(branch)
		if qs == nil {
			return
		}
		var retry []folderQuestion
		var freed <-chan struct{}
		fetched := false
		for _, q := range qs {
			same, known, busy := r.known(&q)
			if !known && busy == nil && !fetched {
				// The clone lacks a commit (or the writer has no clone of the branch yet): one
				// fetch per round, the first question's.
				fetched = true
				same, known, busy = r.fetchAndCompare(ctx, &q)
			}
			if !known && busy != nil && q.busy < maxBusyRechecks {
				q.busy++
				retry, freed = append(retry, q), busy
				continue
			}
			if countFolderCheck(same, known) {
				r.vclusterWatches.pacer.offer(q.tenant, q.key(), time.Now())
			}
		}
		if len(retry) == 0 {
			continue
		}
		select {
		case <-freed:
			r.folderChecks.putBack(branch, retry)
		case <-ctx.Done():
			r.folderChecks.forget(branch)
			return
		}
	}
}

// fetchAndCompare answers q with the Git writer's lookup (gitops.Writer.SameFolder), which
// fetches the branch's recent history once when its clone lacks a commit, with the app's push
// credentials. known is false when it failed; freed is set when the clone was in use.
func (r *Reconciler) fetchAndCompare(ctx context.Context, q *folderQuestion) (same, known bool, freed <-chan struct{}) {
	repo, err := r.gitRepo(ctx, &scope{app: q.app, key: q.key()}, q.loc)
	if err != nil {
		return false, false, nil
	}
	same, err = r.writer.SameFolder(ctx, repo, q.loc.path, q.own, q.applied)
	if busy := (*gitops.BusyError)(nil); errors.As(err, &busy) {
		return false, false, busy.Freed
	}
	return same, err == nil, nil
}

// countFolderCheck counts a folder question's answer (metrics.AppFolderChecksTotal) and reports
// whether it is worth a pass: the folder changed, or the question has no answer.
func countFolderCheck(same, known bool) (pass bool) {
	switch {
	case !known:
		metrics.CountFolderCheck(metrics.FolderUnanswered)
	case same:
		metrics.CountFolderCheck(metrics.FolderUnchanged)
	default:
		metrics.CountFolderCheck(metrics.FolderChanged)
	}
	return !known || !same
}
