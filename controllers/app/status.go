package app

// Every decision about the app's status lives here: how a failed step becomes conditions and a
// retry (failed), when and how the status is written (patchStatus, recordPlacement), and how
// conditions change and become Events (setCondition). The steps only report what they found.

import (
	"context"
	"errors"
	"fmt"

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

// failed reports a failed step on its condition and on Ready, and decides the requeue. Errors
// that are not step errors (host API failures) are returned, for controller-runtime's retry.
func (r *Reconciler) failed(ctx context.Context, s *scope, err error) (ctrl.Result, error) {
	var se *stepError
	if !errors.As(err, &se) {
		return ctrl.Result{}, err
	}
	msg := se.Err.Error()
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
	if se.Next == retryAfter {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting", "reason", se.Reason, "requeueAfter", se.After, "message", msg)
	}
	// Backoff: the error is returned and the workqueue's per-app rate limiter schedules the
	// retry (see newRateLimiter). WaitForChange: a terminal error is counted but never retried;
	// a change of the app or of what it references brings it back.
	return outcome.Result(se)
}

// patchStatus writes the status when this pass changed it.
func (r *Reconciler) patchStatus(ctx context.Context, orig, app *kubeoperav1alpha1.KubeOperaApp) error {
	if !app.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(app, kubeoperav1alpha1.Finalizer) {
		return nil // the object is gone or going
	}
	app.Status.ObservedGeneration = app.Generation
	app.Status.ShortCommit = shortCommit(app.Status.Commit)
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

// recordPlacement persists the app's placement (Tenant and Git folder) the first time it is
// placed, before anything is written to the vCluster or Git. A pass that dies after its side
// effects and before the deferred status patch therefore always leaves a placement deletion can
// clean up. Later moves keep the old folder in status until it is removed (commitManifests), and
// deletion also looks at the folder of the current spec.
func (r *Reconciler) recordPlacement(ctx context.Context, s *scope) error {
	st := &s.app.Status
	if st.Path == "" {
		st.Path, st.Repository, st.Branch = render.Path(s.app), s.app.Spec.Git.URL, render.Branch(s.app)
	}
	if equality.Semantic.DeepEqual(st.Tenant, s.orig.Status.Tenant) && st.Path == s.orig.Status.Path &&
		st.Repository == s.orig.Status.Repository && st.Branch == s.orig.Status.Branch {
		return nil
	}
	want := s.orig.DeepCopy()
	want.Status.Tenant, want.Status.Path, want.Status.Repository, want.Status.Branch = st.Tenant, st.Path, st.Repository, st.Branch
	if err := r.Status().Patch(ctx, want, client.MergeFrom(s.orig)); err != nil {
		return fmt.Errorf("record placement: %w", err)
	}
	// The placement is persisted: the deferred patch diffs against it.
	s.orig.Status.Tenant, s.orig.Status.Path, s.orig.Status.Repository, s.orig.Status.Branch = want.Status.Tenant, st.Path, st.Repository, st.Branch
	s.orig.ResourceVersion = want.ResourceVersion
	return nil
}

// setCondition sets one condition of the app. For Ready and Synced, the conditions a user
// watches, a change of status or reason also records an Event: Normal for True (and for
// progress), Warning for failures. Step conditions change with Ready (which carries the failing
// step's reason and message), so they add no Events of their own. Messages come from this
// operator's own errors, which never carry secret values.
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
	eventType := corev1.EventTypeWarning
	if status == metav1.ConditionTrue || reason == kubeoperav1alpha1.ReasonProgressing || reason == kubeoperav1alpha1.ReasonDeleting {
		eventType = corev1.EventTypeNormal
	}
	r.recorder.Eventf(app, nil, eventType, reason, actionFor(app), "%s", eventnote.Truncate(fmt.Sprintf("%s=%s: %s", condType, status, message)))
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
