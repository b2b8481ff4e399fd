package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// Push Secrets outlive the apps that push with them (docs/app-controller.md, "Deleting an app's
// host namespace"). Deleting a namespace deletes its apps and its Secrets in one sweep: the apps
// wait behind their finalizer, a Secret without one goes at once, and the apps' deletions would
// find no credentials to remove their folders with. So an app's pass holds
// kubeopera.io/git-credentials-in-use on its push Secret before the placement is recorded (before
// the first push), and a small controller of its own releases the finalizer once no app of the
// namespace names the Secret any more (spec.git.secretRef or the placement record), deleted or
// not: it runs on every change of a held Secret and of an app (old and new push Secrets), from
// the cache, which already holds the change when the event arrives; at start it sees every held
// Secret, so a release a crash missed is made then.

// holdPushSecret adds SecretFinalizer to the Secret the app pushes with, unless it is there
// (read from the metadata cache: a held Secret costs no request) or the Secret is being deleted
// (no finalizer can be added then; it stays readable while another holds it). A missing Secret
// is checkInputs' to report. The passes of apps that share the Secret hold it one at a time
// (pushSecretHolds): the first patches it, the others find it held, in the cache or in the
// record of the first one's patch while the cache does not show it yet, and send nothing.
func (r *Reconciler) holdPushSecret(ctx context.Context, s *scope) error {
	name := pushSecretName(s.app)
	if name == "" {
		return nil
	}
	key := types.NamespacedName{Namespace: s.app.Namespace, Name: name}
	h := r.secretHolds.of(key)
	h.mu.Lock()
	defer h.mu.Unlock()
	var reader client.Reader = r.Client
	for attempt := 1; ; attempt++ {
		meta := secretMetadata(key)
		switch err := reader.Get(ctx, key, meta); {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("get push Secret metadata: %w", err)
		}
		// The version this process held it from: the cache has not caught up with that patch.
		if isHeld(meta) || meta.ResourceVersion == h.heldFrom {
			return nil
		}
		from := meta.ResourceVersion
		patch := client.MergeFromWithOptions(meta.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(meta, kubeoperav1alpha1.SecretFinalizer)
		err := r.Patch(ctx, meta, patch)
		if err == nil {
			h.heldFrom = from
			return nil
		}
		if !apierrors.IsConflict(err) || attempt == holdAttempts {
			return fmt.Errorf("hold push Secret %s: %w", name, err)
		}
		// The Secret changed under this patch: another process's pass held it, or the Secret
		// was written. Read it again from the API server (the cache may not have the change
		// yet) instead of failing the pass.
		reader = r.apiReader
	}
}

// isHeld: the Secret carries SecretFinalizer, or is being deleted (no finalizer can be added).
func isHeld(meta *metav1.PartialObjectMetadata) bool {
	return controllerutil.ContainsFinalizer(meta, kubeoperav1alpha1.SecretFinalizer) || !meta.DeletionTimestamp.IsZero()
}

// pushSecretHolds serialises the holds of each push Secret in this process and remembers the
// resourceVersion each was last held from. Apps created together that push with one Secret
// would otherwise all patch it at once, and all but one patch would conflict (make bench P5, 10
// apps per Secret: 0.4 Secret writes and 1.5 Secret reads per app). One entry per push Secret the
// process held, a mutex and a string, kept for the life of the process.
type pushSecretHolds struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]*pushSecretHold
}

type pushSecretHold struct {
	mu sync.Mutex
	// heldFrom is the resourceVersion of the Secret this process's last hold patched (guarded
	// by mu): a cache still showing it has not seen the patch.
	heldFrom string
}

func newPushSecretHolds() *pushSecretHolds {
	return &pushSecretHolds{entries: map[types.NamespacedName]*pushSecretHold{}}
}

func (p *pushSecretHolds) of(key types.NamespacedName) *pushSecretHold {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.entries[key]
	if !ok {
		h = &pushSecretHold{}
		p.entries[key] = h
	}
	return h
}

// holdAttempts bounds holdPushSecret's patches of a Secret that keeps changing under it.
const holdAttempts = 3

// notOnlyTheHold drops the Secret updates that only add or remove the operator's own
// SecretFinalizer: holding a push Secret shared by many apps (holdPushSecret) must not cost every
// one of them a pass. Any other change (data, which bumps only the resourceVersion in the
// metadata the watch sees; labels; annotations; a deletion) passes. An update that changes the
// data and the finalizer in one write is taken for the hold alone: the apps see the new data at
// their next pass.
var notOnlyTheHold = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return true
		}
		held := func(o client.Object) bool {
			return controllerutil.ContainsFinalizer(o, kubeoperav1alpha1.SecretFinalizer)
		}
		if held(e.ObjectOld) == held(e.ObjectNew) {
			return true
		}
		others := func(o client.Object) []string {
			return slices.DeleteFunc(slices.Clone(o.GetFinalizers()), func(f string) bool { return f == kubeoperav1alpha1.SecretFinalizer })
		}
		return !slices.Equal(others(e.ObjectOld), others(e.ObjectNew)) ||
			!maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
			!maps.Equal(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()) ||
			!e.ObjectOld.GetDeletionTimestamp().Equal(e.ObjectNew.GetDeletionTimestamp())
	},
}

func secretMetadata(key types.NamespacedName) *metav1.PartialObjectMetadata {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	meta.Namespace, meta.Name = key.Namespace, key.Name
	return meta
}

// secretGuard releases SecretFinalizer from Secrets no app names any more.
type secretGuard struct {
	client.Client
}

// setupSecretGuard registers the guard's controller: held Secrets (metadata only, the cache the
// app controller shares) and apps, mapped to the Secrets they push with.
func (r *Reconciler) setupSecretGuard(mgr ctrl.Manager) error {
	held := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return controllerutil.ContainsFinalizer(o, kubeoperav1alpha1.SecretFinalizer)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("kubeoperaapp-push-secrets").
		For(&corev1.Secret{}, builder.OnlyMetadata, builder.WithPredicates(held)).
		// Update events map the old and the new app: a push Secret it stopped naming is checked.
		Watches(&kubeoperav1alpha1.KubeOperaApp{}, handler.EnqueueRequestsFromMapFunc(pushSecretsOf)).
		Complete(&secretGuard{Client: mgr.GetClient()})
}

// pushSecretsOf maps an app to the Secrets it pushes with.
func pushSecretsOf(_ context.Context, obj client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, name := range gitSecretRef(obj) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}})
	}
	return reqs
}

// Reconcile releases the Secret when it is held and no app of its namespace names it.
func (g *secretGuard) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	meta := secretMetadata(req.NamespacedName)
	if err := g.Get(ctx, req.NamespacedName, meta); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !controllerutil.ContainsFinalizer(meta, kubeoperav1alpha1.SecretFinalizer) {
		return ctrl.Result{}, nil
	}
	apps := &kubeoperav1alpha1.KubeOperaAppList{}
	if err := g.List(ctx, apps, client.InNamespace(req.Namespace), client.MatchingFields{indexGitSecretRef: req.Name},
		client.Limit(1), readOnlyList); err != nil {
		return ctrl.Result{}, fmt.Errorf("list the apps that push with Secret %s: %w", req.Name, err)
	}
	if len(apps.Items) > 0 {
		return ctrl.Result{}, nil // released when the last of them is gone or stops naming it
	}
	patch := client.MergeFromWithOptions(meta.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(meta, kubeoperav1alpha1.SecretFinalizer)
	if err := g.Patch(ctx, meta, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("release push Secret %s: %w", req.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Released push Secret: no app pushes with it any more")
	return ctrl.Result{}, nil
}
