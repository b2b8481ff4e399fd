package app

// Every decision about the app's status lives here, as the ControlPlane reconciler keeps its
// state machine in its status.go: how a pass starts (startPass), how a step that succeeded
// (stepSucceeded) or failed (failed: conditions and the retry) is reported, when the app is
// Ready (setReady) and Synced (setSynced, with the resync or poll requeue), how a deletion that
// waits for Flux is reported and requeued (setKustomizationDeleting, deleteWait), how a pass
// ends for kstatus readers (summarize: Reconciling, Stalled, observedGeneration), when and how
// the status is written (patchStatus; placement.go records the placement before the first write), and how conditions change and become
// Events (setCondition). The steps only report what they found (objects read, errors).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/eventnote"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// Event actions (events.k8s.io "action": what the controller was doing).
const (
	actionReconcile = "Reconcile"
	actionDelete    = "Delete"
)

// startPass marks an app seen for the first time as being reconciled (no Event: progress is
// not a decision, see recordsEvent).
func (r *Reconciler) startPass(s *scope) {
	if findCondition(s.app, kubeoperav1alpha1.ConditionReady) != nil {
		return
	}
	r.setCondition(s.app, kubeoperav1alpha1.ConditionReady, metav1.ConditionUnknown, kubeoperav1alpha1.ReasonProgressing, "Reconciling")
}

// stepSucceeded reports a step that did its part (TenantResolved, ManifestsCommitted,
// FluxConfigured).
func (r *Reconciler) stepSucceeded(app *kubeoperav1alpha1.KubeOperaApp, condType, message string) {
	r.setCondition(app, condType, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, message)
}

// setReady reports that every step of the pass succeeded: the operator's part is done (Synced
// says whether Flux did its part).
func (r *Reconciler) setReady(s *scope) {
	r.setCondition(s.app, kubeoperav1alpha1.ConditionReady, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded,
		fmt.Sprintf("Manifests committed at %s and Flux configured in Tenant %s", shortCommit(s.app.Status.Commit), s.tenant.Name))
}

// setSynced decides Synced from what the vCluster reported: True when the revision Flux applied
// holds the app's current folder (holds, see appliedHoldsFolder: the pushed commit, or a commit
// of other apps of the branch that left the folder as it is), the Kustomization is Ready for its
// current generation (with wait: true, the applied objects are healthy) and, for an app with an
// Ingress, the Ingress has a load-balancer address and the cert-manager Certificate of its TLS
// Secret, when there is one, is Ready. False otherwise, with the reason of the first thing
// missing: KustomizationNotReady when Flux says it is not Ready, RevisionNotApplied while it has
// not applied the app's folder (why adds a reason the revision could not be compared), then
// IngressAddressPending, then CertificateNotReady. It records the applied revision, the
// available replicas, the URL and, in status.history, when Flux applied the app's commits, and
// returns the requeue: every ResyncInterval once Synced, every SyncPollInterval until then (the
// watches of the vCluster's Kustomizations, Ingresses and Certificates bring the app back
// sooner).
func (r *Reconciler) setSynced(s *scope, available int32, exp exposure, holds bool, why string) ctrl.Result {
	const cond = kubeoperav1alpha1.ConditionSynced
	ks := s.kustomization
	s.app.Status.AppliedRevision = ks.Status.LastAppliedRevision
	s.app.Status.AvailableReplicas = available
	s.app.Status.URL = render.URL(s.app)

	branch := render.Branch(s.app)
	// lastAppliedRevision is what Flux applied and found healthy, whatever its Ready says now.
	markApplied(s.app, appliedCommit(ks.Status.LastAppliedRevision, branch), holds, metav1.Now())
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	current := ks.Status.ObservedGeneration == ks.Generation
	matches := holds
	// kustomize-controller marks Ready Unknown (Progressing) at the start of every reconcile,
	// the periodic one at spec.flux.interval included, and True again when it is done. While
	// it re-applies the revision it last applied, an app whose Synced was decided after Flux
	// had applied that revision (True, or waiting for the Ingress's address or certificate)
	// keeps that decision: the revision is still what runs, and Synced flapping would write the
	// status and record two Events per interval for nothing (docs/app-controller.md, "Read-back").
	reapplying := ready != nil && ready.Status == metav1.ConditionUnknown && decidedAfterApply(findCondition(s.app, cond))
	fetchFailed := sourceFailing(s.gitRepository)

	switch {
	case matches && current && ready != nil && (ready.Status == metav1.ConditionTrue || reapplying):
		return r.setExposed(s, exp, fmt.Sprintf("Flux applied %s", ks.Status.LastAppliedRevision))
	case fetchFailed != nil:
		// What Flux fetches fails, so the commit cannot reach the vCluster: the source says why,
		// whatever the Kustomization still shows of an earlier artifact.
		r.setCondition(s.app, cond, metav1.ConditionFalse, kubeoperav1alpha1.ReasonSourceNotReady,
			fmt.Sprintf("GitRepository %s/%s cannot fetch (%s): %s", s.gitRepository.Namespace, s.gitRepository.Name, fetchFailed.Reason, fetchFailed.Message))
	case ready != nil && ready.Status == metav1.ConditionFalse:
		r.setCondition(s.app, cond, metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationNotReady,
			fmt.Sprintf("Kustomization %s/%s is not Ready (%s): %s", ks.Namespace, ks.Name, ready.Reason, ready.Message))
	default:
		applied := ks.Status.LastAppliedRevision
		if applied == "" {
			applied = "nothing yet"
		}
		r.setCondition(s.app, cond, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied,
			fmt.Sprintf("Waiting for Flux to apply %s@sha1:%s (applied: %s%s)", branch, s.app.Status.Commit, applied, why))
	}
	return ctrl.Result{RequeueAfter: r.Options.SyncPollInterval}
}

// sourceFailing returns the GitRepository's Ready condition when source-controller reported it
// False for the current generation (a fetch or checkout failed), nil otherwise (no GitRepository,
// not observed yet, fetching, or Ready).
func sourceFailing(repo *sourcev1.GitRepository) *metav1.Condition {
	if repo == nil {
		return nil
	}
	ready := apimeta.FindStatusCondition(repo.Status.Conditions, meta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.ObservedGeneration != repo.Generation {
		return nil
	}
	return ready
}

// setExposed decides Synced once Flux applied the app (applied says what): an app without an
// Ingress is Synced; one with an Ingress waits for its load-balancer address (written by the
// ingress controller, synced back by vcluster), then for its Certificate.
func (r *Reconciler) setExposed(s *scope, exp exposure, applied string) ctrl.Result {
	const cond = kubeoperav1alpha1.ConditionSynced
	ns, name := render.TargetNamespace(s.app), s.app.Name
	switch {
	case exp.ingress && exp.address == "":
		r.setCondition(s.app, cond, metav1.ConditionFalse, kubeoperav1alpha1.ReasonIngressAddressPending,
			fmt.Sprintf("%s; Ingress %s/%s has no load-balancer address yet (no ingress controller has admitted it)", applied, ns, name))
	case exp.certificate != nil && !exp.certificate.ready:
		state := "has no Ready condition yet"
		if exp.certificate.reason != "" {
			state = fmt.Sprintf("is not Ready (%s): %s", exp.certificate.reason, exp.certificate.message)
		}
		r.setCondition(s.app, cond, metav1.ConditionFalse, kubeoperav1alpha1.ReasonCertificateNotReady,
			fmt.Sprintf("%s; cert-manager Certificate %s/%s of the Ingress %s", applied, ns, exp.certificate.name, state))
	default:
		msg := applied
		if exp.ingress {
			msg += fmt.Sprintf("; Ingress address %s", exp.address)
		}
		r.setCondition(s.app, cond, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, msg)
		return ctrl.Result{RequeueAfter: r.Options.ResyncInterval}
	}
	return ctrl.Result{RequeueAfter: r.Options.SyncPollInterval}
}

// decidedAfterApply reports whether Synced was decided with Flux's apply done: True, or waiting
// for the Ingress's address or certificate.
func decidedAfterApply(synced *metav1.Condition) bool {
	if synced == nil {
		return false
	}
	return synced.Status == metav1.ConditionTrue || synced.Reason == kubeoperav1alpha1.ReasonIngressAddressPending ||
		synced.Reason == kubeoperav1alpha1.ReasonCertificateNotReady
}

// setKustomizationDeleting reports a deletion that waits for Flux to delete the Kustomization
// (Flux prunes what it applied): Deleting, or KustomizationStuck once it takes longer than
// KustomizationDeleteTimeout (Flux is not running, or its finalizer cannot complete). The
// workload may still run, so the app is kept either way.
func (r *Reconciler) setKustomizationDeleting(app *kubeoperav1alpha1.KubeOperaApp, ks *kustomizev1.Kustomization) {
	if r.stuck(ks) {
		r.setCondition(app, kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationStuck,
			fmt.Sprintf("Kustomization %s/%s is still being deleted after %s; the app is kept until Flux finishes (set annotation %s=true to go on without it)%s",
				ks.Namespace, ks.Name, r.Options.KustomizationDeleteTimeout, kubeoperav1alpha1.AnnotationAbandonKustomization,
				annotationNotTrue(app, kubeoperav1alpha1.AnnotationAbandonKustomization)))
		return
	}
	r.setCondition(app, kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonDeleting,
		fmt.Sprintf("Waiting for Kustomization %s/%s to be deleted (Flux prunes what it applied)", ks.Namespace, ks.Name))
}

// annotationNotTrue explains, for a condition message, why an escape annotation the
// administrator set did not apply: only the value "true" does. "" when it is absent or "true".
func annotationNotTrue(app *kubeoperav1alpha1.KubeOperaApp, key string) string {
	v, ok := app.Annotations[key]
	if !ok || v == "true" {
		return ""
	}
	return fmt.Sprintf(`; annotation %s is %q, which is ignored: only "true" applies`, key, v)
}

// stuck reports whether the Kustomization has been deleting for longer than the timeout.
func (r *Reconciler) stuck(ks *kustomizev1.Kustomization) bool {
	return ks.DeletionTimestamp != nil && time.Since(ks.DeletionTimestamp.Time) > r.Options.KustomizationDeleteTimeout
}

// deleteWait is the requeue of a deletion waiting for the Kustomization: DeletePollInterval,
// slowed to SyncPollInterval once it is stuck.
func (r *Reconciler) deleteWait(app *kubeoperav1alpha1.KubeOperaApp) ctrl.Result {
	if c := findCondition(app, kubeoperav1alpha1.ConditionReady); c != nil && c.Reason == kubeoperav1alpha1.ReasonKustomizationStuck {
		return ctrl.Result{RequeueAfter: r.Options.SyncPollInterval}
	}
	return ctrl.Result{RequeueAfter: r.Options.DeletePollInterval}
}

// failed reports a pass that ended early on the step's condition and on Ready, and returns its
// error for endPass, which decides the requeue. Errors of no step (host API failures) and
// hand-offs (nothing is decided) are returned as they are.
func (r *Reconciler) failed(ctx context.Context, s *scope, err error) (ctrl.Result, error) {
	se, ok := outcome.Of(err)
	if !ok || se.Next == outcome.HandOff {
		return ctrl.Result{}, err
	}
	msg := errorText(se)
	if se.Condition != kubeoperav1alpha1.ConditionReady {
		r.setCondition(s.app, se.Condition, metav1.ConditionFalse, se.Reason, msg)
	}
	r.setCondition(s.app, kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, se.Reason, msg)
	if synced := findCondition(s.app, kubeoperav1alpha1.ConditionSynced); synced != nil &&
		synced.Status == metav1.ConditionTrue && s.app.DeletionTimestamp.IsZero() {
		// The pass did not get to read the Kustomization back: a Synced=True from an earlier
		// pass (perhaps of an older generation) must not stay green.
		r.setCondition(s.app, kubeoperav1alpha1.ConditionSynced, metav1.ConditionUnknown, se.Reason, "Not verified: "+msg)
	}
	if se.Next == outcome.RequeueAfter {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting", "reason", se.Reason, "requeueAfter", se.After, "message", msg)
	}
	// Backoff: endPass returns the error and the workqueue's per-app rate limiter schedules the
	// retry (see newRateLimiter). WaitForChange: a terminal error is counted but never retried;
	// a change of the app or of what it references brings it back.
	return ctrl.Result{}, err
}

// errorText is err's text for a condition or an Event, without what an API server put in an
// answer that was not a Kubernetes Status. client-go turns such an answer (an HTML error page, a
// proxy's text, an internal endpoint behind a kubeconfig's server) into an error whose message
// holds up to 2 KiB of its body for a 403 or a 5xx, marked with a cause of type
// UnexpectedServerResponse; that text is replaced by the status code, the body is never shown.
func errorText(err error) string {
	msg := err.Error()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return msg
	}
	st := status.Status()
	if st.Details == nil || !slices.ContainsFunc(st.Details.Causes, func(c metav1.StatusCause) bool {
		return c.Type == metav1.CauseTypeUnexpectedServerResponse
	}) || st.Message == "" {
		return msg
	}
	return strings.Replace(msg, st.Message, fmt.Sprintf("the API server answered HTTP %d %s, not with a Kubernetes Status (the answer is not shown)",
		st.Code, http.StatusText(int(st.Code))), 1)
}

// summarize ends a pass with the kstatus conditions (what Flux health checks, `kubectl wait`
// and kstatus-based tools read), decided from the conditions the steps set and the pass's
// error:
//
//   - a terminal failure (the app or what it references must change): Stalled=True with
//     Ready's reason and message, and observedGeneration is the generation: it was fully
//     processed, nothing more is tried;
//   - any other failure: Reconciling=True, ProgressingWithRetry, with Ready's message;
//   - no failure but Ready not True (a wait for something outside the operator, a deletion):
//     Reconciling=True with Ready's reason and message; a deletion waiting past its timeout
//     (KustomizationStuck) is Stalled instead;
//   - Ready True but not Synced: Reconciling=True with Synced's reason and message (Flux has
//     not applied the commit yet, or what it applied is not healthy);
//   - Ready and Synced True: neither condition, and observedGeneration is the generation.
//
// kstatus then reports InProgress, Failed and Current for the three classes. Messages are the
// conditions' own, so a pass that repeats an outcome changes nothing (no status write).
func summarize(app *kubeoperav1alpha1.KubeOperaApp, err error) {
	ready := findCondition(app, kubeoperav1alpha1.ConditionReady)
	synced := findCondition(app, kubeoperav1alpha1.ConditionSynced)
	reason, message := kubeoperav1alpha1.ReasonProgressing, "Reconciling"
	if ready != nil {
		reason, message = ready.Reason, ready.Message
	}
	readyFalse := ready != nil && ready.Status == metav1.ConditionFalse
	if outcome.IsWait(err) {
		// Not a failure: Ready says what the app waits for.
		err = nil
	}
	switch {
	case err != nil && outcome.IsTerminal(err):
		if !readyFalse {
			// The failure was not reported on Ready (not a step of the pass).
			reason, message = kubeoperav1alpha1.ReasonProgressing, eventnote.Truncate(errorText(err))
			if r, ok := outcome.ReasonOf(err); ok {
				reason = r
			}
		}
		stalled(app, reason, message)
	case err != nil:
		if !readyFalse {
			message = eventnote.Truncate(errorText(err))
		}
		reconciling(app, kubeoperav1alpha1.ReasonProgressingWithRetry, message)
	case readyFalse && ready.Reason == kubeoperav1alpha1.ReasonKustomizationStuck:
		stalled(app, reason, message)
	case ready == nil || ready.Status != metav1.ConditionTrue || !app.DeletionTimestamp.IsZero():
		reconciling(app, reason, message)
	case synced == nil:
		reconciling(app, kubeoperav1alpha1.ReasonProgressing, "Waiting for Flux to apply the manifests")
	case synced.Status != metav1.ConditionTrue:
		reconciling(app, synced.Reason, synced.Message)
	default:
		apimeta.RemoveStatusCondition(&app.Status.Conditions, kubeoperav1alpha1.ConditionReconciling)
		apimeta.RemoveStatusCondition(&app.Status.Conditions, kubeoperav1alpha1.ConditionStalled)
		app.Status.ObservedGeneration = app.Generation
	}
}

// reconciling marks the app's generation as still being worked on.
func reconciling(app *kubeoperav1alpha1.KubeOperaApp, reason, message string) {
	apimeta.RemoveStatusCondition(&app.Status.Conditions, kubeoperav1alpha1.ConditionStalled)
	apimeta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: kubeoperav1alpha1.ConditionReconciling, Status: metav1.ConditionTrue,
		Reason: reason, Message: message, ObservedGeneration: app.Generation,
	})
}

// stalled marks the app's generation as processed as far as it can be.
func stalled(app *kubeoperav1alpha1.KubeOperaApp, reason, message string) {
	apimeta.RemoveStatusCondition(&app.Status.Conditions, kubeoperav1alpha1.ConditionReconciling)
	apimeta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: kubeoperav1alpha1.ConditionStalled, Status: metav1.ConditionTrue,
		Reason: reason, Message: message, ObservedGeneration: app.Generation,
	})
	if app.DeletionTimestamp.IsZero() {
		app.Status.ObservedGeneration = app.Generation
	}
}

// patchStatus writes the status when this pass changed it.
func (r *Reconciler) patchStatus(ctx context.Context, orig, app *kubeoperav1alpha1.KubeOperaApp) error {
	if !app.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(app, kubeoperav1alpha1.Finalizer) {
		return nil // the object is gone or going
	}
	app.Status.ShortCommit = shortCommit(app.Status.Commit)
	// A condition one step set True and a later step False (TenantResolved: the Tenant is found,
	// then its vCluster does not answer) ends the pass as stored: its transition time is the
	// stored one, so a failure that repeats writes nothing (found by TestBadInputMatrix).
	for i := range app.Status.Conditions {
		c := &app.Status.Conditions[i]
		if o := apimeta.FindStatusCondition(orig.Status.Conditions, c.Type); o != nil && o.Status == c.Status {
			c.LastTransitionTime = o.LastTransitionTime
		}
	}
	if equality.Semantic.DeepEqual(orig.Status, app.Status) {
		return nil
	}
	// Diff the status only: the metadata may have changed in this pass (finalizer).
	base := orig.DeepCopy()
	app.ObjectMeta.DeepCopyInto(&base.ObjectMeta)
	if err := r.Status().Patch(ctx, app, client.MergeFrom(base)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}

// setCondition sets one condition of the app. For Ready and Synced, the conditions a user
// watches, a change of status or reason to a decision also records an Event (recordsEvent):
// Normal for True and for a deletion, Warning for failures. Step conditions change with Ready
// (which carries the failing step's reason and message), so they add no Events of their own.
// Messages come from this operator's own errors, which never carry secret values.
func (r *Reconciler) setCondition(app *kubeoperav1alpha1.KubeOperaApp, condType string, status metav1.ConditionStatus, reason, message string) {
	message = eventnote.Truncate(message)
	// Copy: SetStatusCondition updates the found element in place.
	var prev *metav1.Condition
	if c := apimeta.FindStatusCondition(app.Status.Conditions, condType); c != nil {
		prev = c.DeepCopy()
	}
	apimeta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: app.Generation,
	})
	if condType != kubeoperav1alpha1.ConditionReady && condType != kubeoperav1alpha1.ConditionSynced {
		return
	}
	if prev != nil && prev.Status == status && prev.Reason == reason {
		return
	}
	if !recordsEvent(condType, reason) {
		return
	}
	eventType := corev1.EventTypeWarning
	if status == metav1.ConditionTrue || reason == kubeoperav1alpha1.ReasonDeleting {
		eventType = corev1.EventTypeNormal
	}
	r.recorder.Eventf(app, nil, eventType, reason, actionFor(app), "%s", eventnote.Truncate(fmt.Sprintf("%s=%s: %s", condType, status, message)))
}

// recordsEvent reports whether Ready or Synced changing to reason is worth an Event. Two
// changes are not decisions and record none, only the condition: progress (Progressing: a pass
// starts, an old folder is being removed; the pass's own Events, TenantSelected and Committed,
// say what it did), and Synced waiting for Flux to apply a commit (RevisionNotApplied: the
// Committed Event announced the commit, and a failure Flux reports is KustomizationNotReady or
// SourceNotReady, both Warnings). Without them a new app records four Events (TenantSelected,
// Committed, Ready and Synced True) instead of six, each a write to the API server every
// tenant shares.
func recordsEvent(condType, reason string) bool {
	switch {
	case reason == kubeoperav1alpha1.ReasonProgressing:
		return false
	case condType == kubeoperav1alpha1.ConditionSynced && reason == kubeoperav1alpha1.ReasonRevisionNotApplied:
		return false
	}
	return true
}

// actionFor is the Event action of a pass over app.
func actionFor(app *kubeoperav1alpha1.KubeOperaApp) string {
	if !app.DeletionTimestamp.IsZero() {
		return actionDelete
	}
	return actionReconcile
}

// event records an Event that is not a condition transition.
func (r *Reconciler) event(app *kubeoperav1alpha1.KubeOperaApp, eventType, reason, action, message string) {
	r.recorder.Eventf(app, nil, eventType, reason, action, "%s", eventnote.Truncate(message))
}

// shortCommit is what the Commit printer column shows.
func shortCommit(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}
