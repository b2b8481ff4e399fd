package app

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// maxMessageLength keeps condition messages and event notes within the API's limits (an
// events.k8s.io note holds at most 1 kB).
const maxMessageLength = 1000

// Event actions (events.k8s.io "action": what the controller was doing).
const (
	actionReconcile = "Reconcile"
	actionDelete    = "Delete"
)

// setCondition sets one condition of the app. For Ready and Synced, the conditions a user
// watches, a change of status or reason also records an Event: Normal for True (and for
// progress), Warning for failures. Step conditions change with Ready (which carries the failing
// step's reason and message), so they add no Events of their own. Messages come from this
// operator's own errors, which never carry secret values.
func (r *Reconciler) setCondition(app *kubeoperav1alpha1.KubeOperaApp, condType string, status metav1.ConditionStatus, reason, message string) {
	message = truncate(message)
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
	r.recorder.Eventf(app, nil, eventType, reason, actionFor(app), "%s", truncate(fmt.Sprintf("%s=%s: %s", condType, status, message)))
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
	r.recorder.Eventf(app, nil, eventType, reason, action, "%s", truncate(message))
}

func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	return s[:maxMessageLength-3] + "..."
}

// shortCommit is what the Commit printer column shows.
func shortCommit(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}
