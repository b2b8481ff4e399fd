package app

import (
	"sync"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// Which changes of watched objects are worth a pass. A pass of a Synced app costs a Git fetch,
// uncached Secret reads and several vCluster requests, so an event that cannot change what the
// pass decides must not cause one.

// kustomizationOutcome is what a pass reads from a Kustomization (setSynced): its generation, and
// the outcome of Flux's last reconcile (the revision it applied, Ready, and the generation that
// outcome is for).
type kustomizationOutcome struct {
	generation         int64
	observedGeneration int64
	lastApplied        string
	ready              metav1.ConditionStatus
	readyReason        string
	readyMessage       string
}

func outcomeOf(ks *kustomizev1.Kustomization) kustomizationOutcome {
	o := kustomizationOutcome{
		generation:         ks.Generation,
		observedGeneration: ks.Status.ObservedGeneration,
		lastApplied:        ks.Status.LastAppliedRevision,
		ready:              metav1.ConditionUnknown,
	}
	if c := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition); c != nil {
		o.ready, o.readyReason, o.readyMessage = c.Status, c.Reason, c.Message
	}
	return o
}

// final reports whether Flux finished its reconcile: Ready is True or False. kustomize-controller
// marks Ready Unknown (Progressing) when a reconcile starts, every interval included.
func (o kustomizationOutcome) final() bool {
	return o.ready == metav1.ConditionTrue || o.ready == metav1.ConditionFalse
}

// kustomizationFilter decides which Kustomization events of one watch reach the app: the first
// sight of a Kustomization, a new generation, a new lastAppliedRevision, and Ready reaching a
// final state that differs from the last one passed on (status, reason, message or the generation
// it is for). Flux's periodic reconcile writes Ready=Unknown and then the same Ready=True again:
// neither is passed on, so a Synced app costs nothing per interval. It remembers, per
// Kustomization, what it last passed on; events of one informer arrive one at a time, the mutex
// only guards against a second handler.
type kustomizationFilter struct {
	mu     sync.Mutex
	passed map[types.NamespacedName]kustomizationOutcome
}

func newKustomizationFilter() *kustomizationFilter {
	return &kustomizationFilter{passed: map[types.NamespacedName]kustomizationOutcome{}}
}

func (f *kustomizationFilter) added(obj client.Object) bool { return f.worthAPass(obj) }

func (f *kustomizationFilter) updated(_, newObj client.Object) bool { return f.worthAPass(newObj) }

// worthAPass reports whether the added or updated object obj is passed on, and records it if so.
func (f *kustomizationFilter) worthAPass(obj client.Object) bool {
	ks, ok := obj.(*kustomizev1.Kustomization)
	if !ok {
		return true
	}
	key := client.ObjectKeyFromObject(ks)
	now := outcomeOf(ks)
	f.mu.Lock()
	defer f.mu.Unlock()
	last, seen := f.passed[key]
	switch {
	case !seen, now.generation != last.generation, now.lastApplied != last.lastApplied:
	case !now.final(), now == last:
		return false
	}
	f.passed[key] = now
	return true
}

// deleted drops what was recorded for a deleted object: one of the same name is new again.
func (f *kustomizationFilter) deleted(obj client.Object) {
	f.mu.Lock()
	delete(f.passed, client.ObjectKeyFromObject(obj))
	f.mu.Unlock()
}

// tenantChanged passes on a Tenant update only when it changes what resolving an app reads
// (internal/tenant.Resolve, vclusterClient): its generation, CloudSpace label, deletion, Ready
// status and since when, and the kubeconfig Secret it names. A status write that changes
// anything else (another condition, Ready's message, an observed generation) is not a reason to
// reconcile every app of the Tenant. Creations and deletions always pass.
var tenantChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*tenantv1alpha1.Tenant)
		n, ok2 := e.ObjectNew.(*tenantv1alpha1.Tenant)
		if !ok1 || !ok2 {
			return true
		}
		oldSince, oldReady := tenant.ReadySince(o)
		newSince, newReady := tenant.ReadySince(n)
		oldSecret, oldKey := tenant.KubeconfigSecret(o)
		newSecret, newKey := tenant.KubeconfigSecret(n)
		return o.Generation != n.Generation ||
			o.Labels[tenantv1alpha1.CloudSpaceLabel] != n.Labels[tenantv1alpha1.CloudSpaceLabel] ||
			o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
			oldReady != newReady || !oldSince.Equal(newSince) ||
			oldSecret != newSecret || oldKey != newKey
	},
}
