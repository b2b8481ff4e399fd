package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/eventnote"
	"github.com/kubeopera/kubeopera-operator/internal/metrics"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// Reconciler reconciles ControlPlane objects. It holds dependencies only; the state of one pass
// lives in a scope.
type Reconciler struct {
	client.Client
	Options Options
	// Recorder emits Events on ControlPlanes.
	Recorder events.EventRecorder
	// NewControllerClient builds Controller REST API clients (in-cluster and external checks).
	NewControllerClient conversation.ClientFactory
	// KeyGenerator replaces the RSA key source of generated certificates; nil means the default.
	KeyGenerator pki.KeyGenerator
	// UpdateConsoleClientURLs is told the resolved public and console URLs (docs/controlplane.md#url-resolution). nil is
	// the upstream default, a no-op; a failure is logged and never fails the pass.
	UpdateConsoleClientURLs func(ctx context.Context, cp *datasancev3.ControlPlane, publicURL, consoleURL string) error

	// conversations remembers, per ControlPlane, which Controller processes hold the
	// registration and which credentials the Controller rejected (login lockout).
	conversations conversation.Memory
}

// NewReconciler builds a Reconciler from the manager's client and event recorder. The manager's
// client must read UncachedObjects from the API server (client.CacheOptions.DisableFor).
func NewReconciler(mgr manager.Manager, opts Options) *Reconciler {
	return &Reconciler{
		Client:              mgr.GetClient(),
		Options:             opts,
		Recorder:            mgr.GetEventRecorder(EventRecorderName),
		NewControllerClient: conversation.NewClientFactory(opts.ControllerCAFile),
	}
}

// components are the sub-reconcilers of one pass, in order. Each is independent: they run one
// after the other (no goroutines: every step is one API call or less, see the package doc) and
// their results are combined.
var components = []component{
	{name: resources.ComponentRouter, run: (*Reconciler).reconcileRouter, status: func(st *datasancev3.ControlPlaneStatus) *datasancev3.ComponentStatus {
		return &st.Router.ComponentStatus
	}},
	{name: resources.ComponentNats, run: (*Reconciler).reconcileNats, status: func(st *datasancev3.ControlPlaneStatus) *datasancev3.ComponentStatus {
		return &st.Nats.ComponentStatus
	}},
	{name: resources.ComponentController, run: (*Reconciler).reconcileIoFogController, status: func(st *datasancev3.ControlPlaneStatus) *datasancev3.ComponentStatus {
		return &st.Controller.ComponentStatus
	}},
}

// Reconcile is the entry point for one ControlPlane: read it, run a pass, and persist status
// (and the registration annotation) once, in endPass. The pass ends with nil, a requeue of a
// ready ControlPlane, or an internal/outcome error, which endPass turns into what
// controller-runtime reads, as the KubeOperaApp reconciler does.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	var base, cp *datasancev3.ControlPlane
	// The one deferred call: whichever way the pass returns, endPass ends it (base is nil until
	// there is a pass whose changes to write).
	defer func() { result, retErr = r.endPass(ctx, req.NamespacedName, base, cp, result, retErr) }()
	cp = &datasancev3.ControlPlane{}
	if err := r.Get(ctx, req.NamespacedName, cp); err != nil {
		forgetIfGone(req.NamespacedName, err)
		if apierrors.IsNotFound(err) {
			r.conversations.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cp.DeletionTimestamp.IsZero() {
		// No finalizer: owner references garbage-collect what the ControlPlane owns; the data
		// stores are not owned (see the package doc, "Data on deletion").
		metrics.ForgetControlPlane(req.Namespace, req.Name)
		r.conversations.Forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	base = cp.DeepCopy()
	return r.run(ctx, cp)
}

// run runs the pass under its deadline; endPass's patch runs on the request's context, so a pass
// that ran out of time still records why.
func (r *Reconciler) run(ctx context.Context, cp *datasancev3.ControlPlane) (ctrl.Result, error) {
	passCtx, cancel := context.WithTimeout(ctx, r.Options.passTimeout())
	defer cancel()
	return r.reconcile(passCtx, cp)
}

// endPass ends every pass: what the pass changed is written (a status patch that fails is
// retried with the backoff, whatever the pass decided), Options.OnPass is told, and
// outcome.Result turns the pass's error into what controller-runtime reads.
func (r *Reconciler) endPass(ctx context.Context, key types.NamespacedName, base, cp *datasancev3.ControlPlane, res ctrl.Result, err error) (ctrl.Result, error) {
	if base != nil {
		if patchErr := r.patchControlPlane(ctx, base, cp); patchErr != nil {
			err = outcome.Retry(datasancev3.ReasonApplyFailed, errors.Join(err, patchErr))
		}
	}
	if r.Options.OnPass != nil {
		// After the patch: a test that waits for a pass sees what it wrote.
		r.Options.OnPass(key)
	}
	if err != nil {
		return outcome.Result(err)
	}
	return res, nil
}

// reconcile runs one pass of the state machine (docs/controlplane.md#state-machine) over cp, changing only cp in memory.
func (r *Reconciler) reconcile(ctx context.Context, cp *datasancev3.ControlPlane) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	holder, err := r.namespaceHolder(ctx, cp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if holder != cp.Name {
		r.refuseDuplicate(cp, holder)
		return ctrl.Result{}, nil
	}
	state := effectiveState(cp)
	if state != datasancev3.ConditionReady && needsTransition(cp, state) {
		// Make the new state visible before doing the work (docs/controlplane.md#effective-state).
		setState(cp, state, datasancev3.ReasonProgressing, progressingMessage(state))
		r.event(cp, corev1.EventTypeNormal, stateEventReason(state), progressingMessage(state))
		log.Info("ControlPlane state changed", "state", state, "generation", cp.Generation)
		return ctrl.Result{RequeueAfter: requeueTransition}, nil
	}

	s := newScope(r, cp, state == datasancev3.ConditionReady)
	// The pass's one conversation with the Controller, shared by the components; it reads and
	// calls nothing until one of them asks.
	conv := r.newSession(s)
	defer conv.Close()
	o := r.runPass(ctx, s, conv)
	r.observeCertificates(ctx, cp)
	if o.ready() {
		cp.Status.ObservedGeneration = cp.Generation
		cp.Status.FailingSince = nil
		r.recordState(cp, datasancev3.ConditionReady, datasancev3.ReasonReconciled, "Every component is up to date.", corev1.EventTypeNormal)
		// Come back to check that the Controller still holds the registration, or earlier when a
		// certificate falls due for renewal.
		return ctrl.Result{RequeueAfter: s.untilRenewal(r.Options.controllerVerifyInterval())}, nil
	}
	eventType := corev1.EventTypeNormal
	if o.failed() {
		eventType = corev1.EventTypeWarning
	}
	if state == datasancev3.ConditionReady && r.failingTooLong(cp) {
		// Failing for longer than the grace period: no longer ready (docs/controlplane.md#failing-while-ready).
		r.recordState(cp, datasancev3.ConditionDeploying, o.reason, o.message, corev1.EventTypeWarning)
		log.Info("ControlPlane left ready: its passes fail for longer than the grace period", "reason", o.reason,
			"failingSince", cp.Status.FailingSince.Time, "gracePeriod", r.Options.readyGracePeriod())
		return ctrl.Result{}, o.err
	}
	if s.announced[o.message] {
		// The component emitted this failure's Event itself (once per cause).
		setState(cp, state, o.reason, o.message)
		return ctrl.Result{}, o.err
	}
	r.recordState(cp, state, o.reason, o.message, eventType)
	return ctrl.Result{}, o.err
}

// runPass takes the workloads over from the Datasance operator where it left some (takeOver,
// which ends the pass while it waits or refuses), then runs the components and combines them.
func (r *Reconciler) runPass(ctx context.Context, s *scope, conv controllerConversation) passOutcome {
	log := ctrl.LoggerFrom(ctx)
	if err := r.takeOver(ctx, s); err != nil {
		if !outcome.IsWait(err) {
			log.V(1).Info("Taking over failed", "reason", reasonOf(err), "error", err.Error())
		}
		return combine([]error{err})
	}
	errs := make([]error, 0, len(components))
	for _, c := range components {
		err := c.run(r, ctx, s, conv)
		setComponentStatus(c.status(&s.cp.Status), err)
		errs = append(errs, err)
		observeComponent(s.cp, c.name, err)
		if err != nil && !outcome.IsWait(err) {
			log.V(1).Info("Component failed", "component", c.name, "reason", reasonOf(err), "error", err.Error())
		}
	}
	return combine(errs)
}

// failingTooLong records when the passes of a ready ControlPlane started failing (the first
// failed pass after a ready one) and reports whether that is longer ago than the grace period.
// The time is in the status, so an operator restart does not extend the grace.
func (r *Reconciler) failingTooLong(cp *datasancev3.ControlPlane) bool {
	now := r.now()
	if cp.Status.FailingSince == nil {
		cp.Status.FailingSince = &metav1.Time{Time: now.Truncate(time.Second)}
	}
	return now.Sub(cp.Status.FailingSince.Time) >= r.Options.readyGracePeriod()
}

// recordState sets the True condition and emits an Event when its type or reason changed, so a
// requeue loop waiting for the same thing does not repeat the Event.
func (r *Reconciler) recordState(cp *datasancev3.ControlPlane, state, reason, message, eventType string) {
	prev := trueCondition(cp)
	changed := prev == nil || prev.Type != state || prev.Reason != reason
	setState(cp, state, reason, message)
	if changed {
		r.event(cp, eventType, reason, message)
	}
}

// event emits a Kubernetes Event on cp. The note is a plain sentence; it never holds secrets.
func (r *Reconciler) event(cp *datasancev3.ControlPlane, eventType, reason, note string) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(cp, nil, eventType, reason, "Reconcile", "%s", eventnote.Truncate(note))
}

func (r *Reconciler) now() time.Time {
	if r.Options.Clock != nil {
		return r.Options.Clock.Now()
	}
	return time.Now()
}

func progressingMessage(state string) string {
	if state == datasancev3.ConditionUpdating {
		return "The spec changed; rolling out the new generation."
	}
	return "Deploying the control plane."
}

func stateEventReason(state string) string {
	if state == datasancev3.ConditionUpdating {
		return "Updating"
	}
	return "Deploying"
}

// patchControlPlane writes what the pass changed: the registration annotation (metadata merge
// patch) and the status (status subresource merge patch). Nothing is sent when nothing changed.
// Both patches go through copies, so one patch's response cannot undo the other's changes.
func (r *Reconciler) patchControlPlane(ctx context.Context, base, cp *datasancev3.ControlPlane) error {
	var errs []error
	if !equality.Semantic.DeepEqual(base.Annotations, cp.Annotations) {
		obj := cp.DeepCopy()
		if err := r.Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			errs = append(errs, fmt.Errorf("patch ControlPlane metadata: %w", client.IgnoreNotFound(err)))
		}
	}
	if !equality.Semantic.DeepEqual(base.Status, cp.Status) {
		obj := cp.DeepCopy()
		if err := r.Status().Patch(ctx, obj, client.MergeFrom(base)); err != nil {
			errs = append(errs, fmt.Errorf("patch ControlPlane status: %w", client.IgnoreNotFound(err)))
		}
	}
	return errors.Join(errs...)
}

// SetupWithManager registers the reconciler. Beyond the upstream (which watched the ControlPlane
// only), it watches every kind it owns, so a deleted or edited owned object is restored, and the
// Secrets a ControlPlane references without owning them (bootstrap password, controller TLS,
// bring-your-own CAs), so their changes are noticed.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &datasancev3.ControlPlane{},
		indexReferencedSecrets, referencedSecretNames); err != nil {
		return fmt.Errorf("index ControlPlanes by referenced Secret: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		// Passes follow spec changes (generation), annotation changes other than the operator's
		// own registration hash, owned-object and referenced-Secret changes, and the requeues
		// the components ask for — never the operator's own status writes, which would skip
		// every requeue delay and turn a failing pass into a hot loop.
		For(&datasancev3.ControlPlane{}, builder.WithPredicates(controlPlaneChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.maxConcurrentReconciles()}).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		// Secrets: metadata only (owner references and names are all the handlers need); the
		// manager reads their data on demand, so a cluster's Secrets are never cached in full.
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&networkingv1.Ingress{}).
		// PodDisruptionBudgets are not watched: they are read from the API server
		// (UncachedObjects), so a manager whose RBAC predates them still starts; a changed budget
		// is repaired by the next pass.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.controlPlanesForSecret)).
		// Workloads of an operand's name the ControlPlane does not control: a ForeignWorkload
		// refusal is lifted when they go.
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.controlPlanesForWorkload)).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(r.controlPlanesForWorkload)).
		// NATS data kept on deletion, so not owned: the JetStream PVCs and the JWT bundle.
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.controlPlanesForNatsData)).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.controlPlanesForNatsData)).
		// A refused duplicate may become the namespace's holder when another ControlPlane goes.
		Watches(&datasancev3.ControlPlane{}, handler.EnqueueRequestsFromMapFunc(r.otherControlPlanesOnDelete),
			builder.WithPredicates(deletesOnly())).
		Named("controlplane").
		Complete(r)
}

// controlPlaneChanged passes the ControlPlane events that call for a pass: creation, deletion, a
// new generation (spec change) or annotations changed by someone else. The operator's status
// patches and its registration annotation do not pass.
func controlPlaneChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, foreignAnnotationsChanged())
}

// foreignAnnotationsChanged passes an update whose annotations changed other than the
// registration hash and the CA record the operator writes itself (a user's or a tool's request
// to reconcile).
func foreignAnnotationsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			if e.ObjectOld == nil || e.ObjectNew == nil {
				return false
			}
			return !equality.Semantic.DeepEqual(withoutOwnAnnotations(e.ObjectOld.GetAnnotations()),
				withoutOwnAnnotations(e.ObjectNew.GetAnnotations()))
		},
	}
}

func withoutOwnAnnotations(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if k != resources.AnnotationRegistration && k != annotationImportedCAs {
			out[k] = v
		}
	}
	return out
}
