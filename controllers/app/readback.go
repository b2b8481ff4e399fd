package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// Read-back passes (docs/app-controller.md, "Read-back passes"). Most passes of an app that is
// Ready have nothing to write: Flux reported progress in the vCluster (its Kustomization was
// created, applied the commit, became Ready), the Ingress got its address, the poll came round.
// A full pass answers each of them by submitting the app's folder to the Git writer (a fetch,
// and a second pass once the writer answers) and reading every object it applies in the
// vCluster to compare it, before it reads the status back. A pass whose
// inputs are those of the last full pass that succeeded, and not older than the resync
// interval, reads the status back first: when the vCluster shows what that full pass left
// (the GitRepository and Kustomization it applied, unchanged, neither failing) and Flux either
// applied a revision that holds the app's folder or has applied nothing new since the status
// was written, the pass decides Synced from it and ends. Anything else (an object missing,
// changed or handed back, a failure Flux reports, a revision that does not hold the folder: a
// change pushed by hand, another app's older commit) makes it a full pass, which repairs and
// reports as before.
//
// The inputs are everything a full pass reads from the host that can change what it writes:
// the app's generation and annotations, its Tenant, the version of the kubeconfig Secret its
// vCluster client is built from, and the resourceVersions of the Secrets it names. What a read-back pass does not look at (the Role,
// RoleBinding, ServiceAccount and Secret copies in the vCluster, the branch in Git) is checked
// by the next full pass: the periodic one (--app-resync-interval) at the latest, or the first
// after an input changed. An event that concerns the app through another app (a push Secret it
// gives Flux, a repository it waits for) forgets its record, so that pass is a full one.

// passInputs are the inputs of a full pass (see above).
type passInputs struct {
	generation  int64
	annotations map[string]string
	tenant      types.NamespacedName
	tenantRV    string
	// kubeconfig is the version of the Tenant's kubeconfig Secret the vCluster client is built
	// from (resolveTenant).
	kubeconfig tenant.SecretVersion
	// secrets are the resourceVersions of the Secrets the app names, in secretRefs' order ("" for
	// one the cache does not hold).
	secrets []string
	// commit is status.commit: as the pass read it, and in a record as the full pass left it.
	commit string
}

func (a passInputs) equal(b passInputs) bool {
	return a.generation == b.generation && maps.Equal(a.annotations, b.annotations) &&
		a.tenant == b.tenant && a.tenantRV == b.tenantRV && a.kubeconfig == b.kubeconfig &&
		slices.Equal(a.secrets, b.secrets) && a.commit == b.commit
}

// configuredApp is what the last successful full pass of an app left in its vCluster.
type configuredApp struct {
	inputs passInputs
	at     time.Time
	// kustomizationGeneration and repositoryGeneration are the generations of the Kustomization
	// and GitRepository as applied: a spec changed since (by the tenant) has another.
	kustomizationGeneration, repositoryGeneration int64
}

// configuredApps are the records of the apps' last successful full passes. The zero value is
// unusable; a nil *configuredApps records nothing (every pass is a full one).
type configuredApps struct {
	mu   sync.Mutex
	apps map[types.NamespacedName]configuredApp
}

func newConfiguredApps() *configuredApps {
	return &configuredApps{apps: map[types.NamespacedName]configuredApp{}}
}

func (c *configuredApps) record(key types.NamespacedName, rec configuredApp) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.apps[key] = rec
}

func (c *configuredApps) get(key types.NamespacedName) (configuredApp, bool) {
	if c == nil {
		return configuredApp{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.apps[key]
	return rec, ok
}

func (c *configuredApps) forget(key types.NamespacedName) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.apps, key)
}

// forgetting wraps a map function of a watch whose events concern apps through another app:
// each app it returns has its record forgotten, so its next pass is a full one.
func (r *Reconciler) forgetting(fn func(context.Context, client.Object) []reconcile.Request) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		reqs := fn(ctx, obj)
		for _, req := range reqs {
			r.configured.forget(req.NamespacedName)
		}
		return reqs
	}
}

// inputsOf returns the inputs of the pass (the Tenant is resolved): the named Secrets' versions
// come from the manager's metadata cache.
func (r *Reconciler) inputsOf(ctx context.Context, s *scope) passInputs {
	in := passInputs{
		generation:  s.app.Generation,
		annotations: maps.Clone(s.app.Annotations),
		tenant:      client.ObjectKeyFromObject(s.tenant),
		tenantRV:    s.tenant.ResourceVersion,
		kubeconfig:  s.kubeconfig,
		commit:      s.app.Status.Commit,
	}
	for _, name := range secretRefs(s.app) {
		meta := secretMetadata(types.NamespacedName{Namespace: s.app.Namespace, Name: name})
		rv := ""
		if err := r.Get(ctx, client.ObjectKeyFromObject(meta), meta); err == nil {
			rv = meta.ResourceVersion
		}
		in.secrets = append(in.secrets, rv)
	}
	return in
}

// recordConfigured records a full pass that applied everything (s.kustomization and
// s.gitRepository are the applied objects).
func (r *Reconciler) recordConfigured(s *scope, in passInputs) {
	in.commit = s.app.Status.Commit
	r.configured.record(s.key, configuredApp{
		inputs: in, at: time.Now(),
		kustomizationGeneration: s.kustomization.Generation,
		repositoryGeneration:    s.gitRepository.Generation,
	})
}

// errFullPass: a read-back pass found a reason to be a full one (wrapped with it).
var errFullPass = errors.New("a full pass is needed")

func fullPass(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errFullPass}, args...)...)
}

// readBack tries to end the pass with the vCluster's status only (see above). An error wrapping
// errFullPass says why the pass must be a full one instead; then nothing was recorded in the
// status. Any other error is the pass's outcome (outcome.Pending: the branch is busy).
func (r *Reconciler) readBack(ctx context.Context, s *scope, in passInputs) (ctrl.Result, error) {
	rec, ok := r.configured.get(s.key)
	switch {
	case !ok:
		return ctrl.Result{}, fullPass("no full pass recorded")
	case !rec.inputs.equal(in):
		return ctrl.Result{}, fullPass("the inputs changed")
	case time.Since(rec.at) >= r.Options.ResyncInterval:
		return ctrl.Result{}, fullPass("the periodic pass")
	case r.pushes.outstanding(s.key):
		return ctrl.Result{}, fullPass("a push is outstanding")
	case s.app.Status.Commit == "":
		return ctrl.Result{}, fullPass("no commit in the status")
	}
	if c := findCondition(s.app, kubeoperav1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != s.app.Generation {
		return ctrl.Result{}, fullPass("not Ready for generation %d", s.app.Generation)
	}
	fluxKey := client.ObjectKey{Namespace: render.FluxNamespace(s.app), Name: render.FluxName(s.app)}
	ks := &kustomizev1.Kustomization{}
	if err := s.vc.Get(ctx, fluxKey, ks); err != nil {
		return ctrl.Result{}, fullPass("read the Kustomization: %w", err)
	}
	if !managed(ks) || ks.Generation != rec.kustomizationGeneration {
		return ctrl.Result{}, fullPass("the Kustomization changed")
	}
	repo := &sourcev1.GitRepository{}
	if err := s.vc.Get(ctx, fluxKey, repo); err != nil {
		return ctrl.Result{}, fullPass("read the GitRepository: %w", err)
	}
	if !managed(repo) || repo.Generation != rec.repositoryGeneration {
		return ctrl.Result{}, fullPass("the GitRepository changed")
	}
	if ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition); (ready != nil && ready.Status == metav1.ConditionFalse) || sourceFailing(repo) != nil {
		return ctrl.Result{}, fullPass("Flux reports a failure")
	}
	s.kustomization, s.gitRepository, s.head = ks, repo, s.app.Status.Commit
	revision := ks.Status.LastAppliedRevision
	holds, why, err := r.appliedHoldsFolder(ctx, s, revision)
	switch {
	case errors.Is(err, gitops.ErrBranchBusy):
		// Not decided: as in observeSync, the pass asks again once the batch holding the
		// branch is done.
		return ctrl.Result{}, outcome.Pending(reasonBranchBusy, err)
	case err != nil:
		return ctrl.Result{}, fullPass("compare the applied revision: %w", err)
	case !holds && revision != s.app.Status.AppliedRevision:
		return ctrl.Result{}, fullPass("Flux applied %s, which does not hold the app's folder", revision)
	}
	available, err := availableReplicas(ctx, s)
	if err != nil {
		return ctrl.Result{}, fullPass("read the Deployment: %w", err)
	}
	exp, err := observeIngress(ctx, s)
	if err != nil {
		return ctrl.Result{}, fullPass("read the Ingress: %w", err)
	}
	return r.setSynced(s, available, exp, holds, why), nil
}
