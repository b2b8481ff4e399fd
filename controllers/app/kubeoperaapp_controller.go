package app

import (
	"context"
	"errors"
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/cachewait"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
)

// Name is the controller's name: events' reporting controller, field manager in vClusters.
const Name = "kubeopera-app-controller"

// Reconciler reconciles KubeOperaApp objects.
type Reconciler struct {
	client.Client
	Options Options

	// apiReader reads Secrets (their data is not cached: the manager only caches Secret
	// metadata; Git Secrets' data is kept in secretData) and Tenants when the Tenant API was
	// absent at start.
	apiReader client.Reader
	recorder  recorder.EventRecorder
	writer    *gitops.Writer
	clients   *tenant.Clients
	tenantAPI *tenantAPI
	repoUsers *repoUsers
	// pushes are the apps' submitted Git writes (pushes.go).
	pushes *pushes
	// secretHolds serialises the holds of each push Secret (secretguard.go).
	secretHolds *pushSecretHolds
	// secretData keeps the data of the Git credentials Secrets between passes (secretdata.go).
	secretData *gitSecretData
	// vclusterWatches watches the Kustomizations, Ingresses and Certificates in each vCluster
	// (tenantwatch.go).
	vclusterWatches *vclusterWatches
	// folderChecks answers, off the watch, the Kustomization events that need the Git writer's
	// clone (foldercheck.go).
	folderChecks *folderChecks
	// configured records each app's last successful full pass, for read-back passes
	// (readback.go).
	configured *configuredApps
}

// NewReconciler builds a Reconciler from the manager's clients.
func NewReconciler(mgr manager.Manager, opts Options) (*Reconciler, error) {
	opts = opts.withDefaults()
	if opts.GitCacheDir == "" {
		return nil, errors.New("app reconciler: GitCacheDir is empty")
	}
	newClient := opts.NewVClusterClient
	if newClient == nil {
		newClient = tenant.NewClient(mgr.GetScheme())
	}
	// Commits carry gitops.DefaultAuthorName and DefaultAuthorEmail, the App Controller's identity.
	var gitOpts []gitops.Option
	if opts.MaxGitRepositorySize > 0 {
		gitOpts = append(gitOpts, gitops.WithMaxRepositorySize(opts.MaxGitRepositorySize))
	}
	if opts.MaxGitInflatedSize > 0 {
		gitOpts = append(gitOpts, gitops.WithMaxInflatedSize(opts.MaxGitInflatedSize))
	}
	if opts.MaxConcurrentGitOperations > 0 {
		gitOpts = append(gitOpts, gitops.WithMaxConcurrentOperations(opts.MaxConcurrentGitOperations))
	}
	if opts.MaxConcurrentGitOperationsPerHost > 0 {
		gitOpts = append(gitOpts, gitops.WithMaxOperationsPerHost(opts.MaxConcurrentGitOperationsPerHost))
	}
	if opts.MaxGitCacheSize > 0 {
		gitOpts = append(gitOpts, gitops.WithMaxCacheSize(opts.MaxGitCacheSize))
	}
	gitOpts = append(gitOpts, opts.GitOptions...)
	return &Reconciler{
		Client:       mgr.GetClient(),
		Options:      opts,
		apiReader:    mgr.GetAPIReader(),
		recorder:     mgr.GetEventRecorder(Name),
		writer:       gitops.NewWriter(opts.GitCacheDir, gitOpts...),
		clients:      tenant.NewClients(newClient),
		tenantAPI:    newTenantAPI(mgr.GetRESTMapper()),
		repoUsers:    newRepoUsers(),
		pushes:       newPushes(),
		secretHolds:  newPushSecretHolds(),
		folderChecks: newFolderChecks(),
		configured:   newConfiguredApps(),
		secretData:   newGitSecretData(defaultGitSecretEntries),
	}, nil
}

// VClusterClientBuilds is the number of vCluster clients built so far (the client cache's
// misses).
func (r *Reconciler) VClusterClientBuilds() int { return r.clients.Builds() }

// scope is the state of one reconcile pass.
type scope struct {
	app *kubeoperav1alpha1.KubeOperaApp
	// orig is the app as read (or as last patched): the base of the status patches.
	orig *kubeoperav1alpha1.KubeOperaApp
	key  types.NamespacedName
	// tenant and vc are set once the Tenant is resolved; kubeconfig is the version of the
	// kubeconfig Secret vc is built from.
	tenant     *tenantv1alpha1.Tenant
	vc         client.Client
	kubeconfig tenant.SecretVersion
	// registrySecret is the host's pull Secret the app names (checkRegistrySecret).
	registrySecret *corev1.Secret
	// creds are the app's Git credentials, read once per pass (credentials.go).
	creds gitCredentials
	// statusLost: the app was placed, but its status holds no commit and no history.
	statusLost bool
	// files are the app's rendered manifests (checkInputs), committed by commitManifests.
	files map[string][]byte
	// namespaceExists: the app namespace exists in the vCluster (checkInputs).
	namespaceExists bool
	// head is the branch head that holds the app's current manifests (this pass's write).
	head string
	// kustomization is the applied Kustomization, with the status the vCluster returned.
	kustomization *kustomizev1.Kustomization
	// gitRepository is the applied GitRepository, with the status the vCluster returned.
	gitRepository *sourcev1.GitRepository
	// outcomesRead are the folders (folderOf) whose push outcome this pass read: forgotten once
	// its status is written, kept for the next pass otherwise (pushes.go).
	outcomesRead []string
	// committed: the app's folder is on its branch (commitManifests read its outcome).
	committed bool
	// versions are the app's resourceVersions this pass read and wrote (awaitOwnWrites).
	versions *cachewait.Versions
}

// Reconcile is the entry point for one KubeOperaApp. A pass ends with nil, a requeue of a
// healthy app (its next check), or an error of internal/outcome's vocabulary, which endPass
// reports and turns into what controller-runtime reads.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	var s *scope
	// The one deferred call: whichever way the pass returns, endPass ends it (s is nil until the
	// app is read).
	defer func() { result, retErr = r.endPass(ctx, req.NamespacedName, s, result, retErr) }()
	app := &kubeoperav1alpha1.KubeOperaApp{}
	if err := r.Get(ctx, req.NamespacedName, app); err != nil {
		if apierrors.IsNotFound(err) {
			r.pushes.forget(req.NamespacedName)
			r.configured.forget(req.NamespacedName)
			r.leaveRepositories(ctx, req.NamespacedName)
			r.forgetClientsOfGoneApp(ctx, req.Namespace)
		}
		forgetAppIfGone(req.NamespacedName, err)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s = &scope{app: app, orig: app.DeepCopy(), key: req.NamespacedName, versions: cachewait.New(app)}
	// A placed app whose status holds no commit lost its status (restored from a backup without
	// it, or wiped): the history is read back from Git (commitManifests).
	noCommit := app.Status.Commit == "" && len(app.Status.History) == 0
	// After the copy: a status that lost the placement gets it back with this pass's patch.
	s.statusLost = restorePlacement(app) && noCommit
	return r.run(ctx, s)
}

// run runs the pass under its deadline; endPass's status patch and its wait for the cache run
// on the request's context, so a pass that ran out of time still records why.
func (r *Reconciler) run(ctx context.Context, s *scope) (ctrl.Result, error) {
	passCtx, cancel := context.WithTimeout(ctx, r.Options.PassTimeout)
	defer cancel()
	if !s.app.DeletionTimestamp.IsZero() {
		// A write still pending is superseded by the folder's removal (or pushed before it),
		// which is recorded in its place (pushes.go).
		return r.reconcileDelete(passCtx, s)
	}
	// The finalizer is added with the placement record, in one patch, before the first write
	// (recordPlacement); a pass that ends before it adds it alone (endPass).
	return r.reconcile(passCtx, s)
}

// ensureFinalizer adds the app's finalizer unless it is there (or the app is being deleted).
// A pass that gets as far as the placement adds it with the placement record (writePlacement);
// one that ends before that adds it here, so every app has it after its first pass.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) error {
	if !needsFinalizer(s.app) {
		return nil
	}
	obj := s.app.DeepCopy()
	patch := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(obj, kubeoperav1alpha1.Finalizer)
	if err := r.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	s.wroteMetadata(obj)
	return nil
}

// needsFinalizer: the app lacks its finalizer and is not being deleted (a deleted object takes
// no new finalizer).
func needsFinalizer(app *kubeoperav1alpha1.KubeOperaApp) bool {
	return app.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(app, kubeoperav1alpha1.Finalizer)
}

// endPass ends every pass, in this order: a pass that decided something (anything but a
// hand-off, outcome.Pending) has its kstatus conditions summarized and its status written once;
// a hand-off is logged and, when it waits for a branch another batch holds, requeued when that
// batch is done; the pass waits for the cache to show its own writes; the app's announced change
// no longer holds the Git writer's batching window (it was submitted or is not coming); and
// Options.OnPass is told. Last, outcome.Result turns the pass's error into what
// controller-runtime reads. s is nil when the app could not be read.
func (r *Reconciler) endPass(ctx context.Context, key types.NamespacedName, s *scope, res ctrl.Result, err error) (ctrl.Result, error) {
	if s != nil {
		if finErr := r.ensureFinalizer(ctx, s); finErr != nil && !apierrors.IsNotFound(finErr) {
			err = outcome.Retry(kubeoperav1alpha1.ReasonProgressingWithRetry, errors.Join(err, finErr))
		}
		observeApp(s.app)
		if outcome.IsPending(err) {
			r.handedOff(ctx, s, err)
		} else {
			summarize(s.app, err)
			if patchErr := r.patchStatus(ctx, s.orig, s.app); patchErr != nil {
				// A status not written is retried with the backoff, whatever the pass decided.
				err = outcome.Retry(kubeoperav1alpha1.ReasonProgressingWithRetry, errors.Join(err, patchErr))
			} else {
				r.pushes.forgetRead(s)
			}
			s.versions.Wrote(s.app)
		}
		r.awaitOwnWrites(ctx, s)
	}
	r.writer.Unexpect(key.String())
	if r.Options.OnPass != nil {
		r.Options.OnPass(key)
	}
	if err != nil {
		return outcome.Result(err)
	}
	return res, nil
}

// reconcile runs the steps of a normal pass in order; the first failure ends the pass. Once the
// Tenant is resolved, a pass whose inputs are those of the last successful full pass may end with
// reading the vCluster's status back (readBack); a full pass that applied everything is recorded
// for the passes after it.
func (r *Reconciler) reconcile(ctx context.Context, s *scope) (ctrl.Result, error) {
	r.startPass(s)
	if err := r.resolveTenant(ctx, s); err != nil {
		return r.failed(ctx, s, err)
	}
	in := r.inputsOf(ctx, s)
	res, err := r.readBack(ctx, s, in)
	if !errors.Is(err, errFullPass) {
		return res, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Full pass", "reason", err.Error())
	r.configured.forget(s.key)
	steps := []func(context.Context, *scope) error{
		// Inputs read before any write: a bad one leaves nothing behind.
		r.checkInputs,
		// The placement is recorded before the first write (see placed).
		r.recordPlacement,
		r.commitManifests,
		// The app namespace and the pull Secret after the commit, so that a Git failure (bad
		// credentials, a folder of another app) leaves nothing in the vCluster either.
		r.prepareVCluster,
		r.configureFlux,
		// Flux reads the new folder now: a move may remove the old one.
		r.finishMove,
	}
	for _, step := range steps {
		err := step(ctx, s)
		switch {
		case errors.Is(err, gitops.ErrPending) && s.committed:
			// The old folder's removal is pending: what the pass did so far (the new folder's
			// commit) is written, the app still progressing; the push's callback brings it back.
			r.setCondition(s.app, kubeoperav1alpha1.ConditionReady, metav1.ConditionUnknown, kubeoperav1alpha1.ReasonProgressing,
				"Removing the old folder after a move")
			return ctrl.Result{}, nil
		case err != nil:
			return r.failed(ctx, s, err)
		}
	}
	r.recordConfigured(s, in)
	r.setReady(s)
	return r.observeSync(ctx, s)
}

// Hand-offs to Git (outcome.Pending). A pass hands off when its push is submitted and not done
// yet (reasonPushPending, wrapping gitops.ErrPending), or when a read of its branch found the
// clone held by another batch (reasonBranchBusy, wrapping a *gitops.BusyError: a pass never
// waits for another batch's network I/O). Such a pass writes no status and is requeued when the
// push or the batch is done.
const (
	reasonPushPending = "GitPushPending"
	reasonBranchBusy  = "GitBranchBusy"
)

// handedOff logs a hand-off and, for a busy branch, has the app requeued when the batch is done
// (a push's own callback requeues the app of a pending push).
func (r *Reconciler) handedOff(ctx context.Context, s *scope, err error) {
	var busy *gitops.BusyError
	if errors.As(err, &busy) {
		ctrl.LoggerFrom(ctx).V(1).Info("The app's branch is being written by another batch; the app is requeued when it is done", "branch", busy.Branch)
		r.pushes.whenFreed(s.key, busy.Freed)
		return
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Git push pending; the app is requeued when it is done")
}
