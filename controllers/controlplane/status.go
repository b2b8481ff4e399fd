package controlplane

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// trueCondition returns the first condition with status True, or nil.
func trueCondition(cp *datasancev3.ControlPlane) *metav1.Condition {
	for i := range cp.Status.Conditions {
		if cp.Status.Conditions[i].Status == metav1.ConditionTrue {
			return &cp.Status.Conditions[i]
		}
	}
	return nil
}

// effectiveState is the state the pass acts on (docs/controlplane.md#effective-state): deploying when no valid True
// condition exists, updating when the True condition describes an older generation (the
// ready→updating jump), otherwise the True condition's type.
func effectiveState(cp *datasancev3.ControlPlane) string {
	c := trueCondition(cp)
	switch {
	case c == nil || !isStateType(c.Type):
		return datasancev3.ConditionDeploying
	case c.ObservedGeneration != cp.Generation:
		return datasancev3.ConditionUpdating
	default:
		return c.Type
	}
}

// needsTransition reports whether the True condition does not yet say state for the current
// generation: first sight of a ControlPlane, or the first pass after a spec change.
func needsTransition(cp *datasancev3.ControlPlane, state string) bool {
	c := trueCondition(cp)
	return c == nil || c.Type != state || c.ObservedGeneration != cp.Generation
}

func isStateType(t string) bool {
	switch t {
	case datasancev3.ConditionDeploying, datasancev3.ConditionUpdating, datasancev3.ConditionReady:
		return true
	}
	return false
}

// setState makes state the one True condition, with reason and message and the current
// generation; every other True condition becomes False with reason Transitioned. The transition
// time of a condition changes only when its status does.
func setState(cp *datasancev3.ControlPlane, state, reason, message string) {
	for i := range cp.Status.Conditions {
		c := &cp.Status.Conditions[i]
		if c.Type == state || c.Status != metav1.ConditionTrue {
			continue
		}
		meta.SetStatusCondition(&cp.Status.Conditions, metav1.Condition{
			Type:               c.Type,
			Status:             metav1.ConditionFalse,
			Reason:             datasancev3.ReasonTransitioned,
			Message:            "Superseded by " + state + ".",
			ObservedGeneration: cp.Generation,
		})
	}
	meta.SetStatusCondition(&cp.Status.Conditions, metav1.Condition{
		Type:               state,
		Status:             metav1.ConditionTrue,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: cp.Generation,
	})
}

// setComponentStatus records one component's outcome in its status block.
func setComponentStatus(st *datasancev3.ComponentStatus, err error) {
	switch {
	case err != nil:
		st.Ready = false
		st.Reason = reasonOf(err)
		st.Message = err.Error()
	default:
		st.Ready = true
		st.Reason = datasancev3.ReasonReconciled
		st.Message = "Up to date."
	}
}
