package controlplane

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// refuse is the handling of a state the operator must not act on until a user changes something
// (lost data keys, storage the volumes cannot give): a terminal error with reason, and a Warning
// Event once per cause — not again while the component's status from the previous pass already
// reports the same message. The message is marked as announced, so the state change does not
// repeat it. (badCertificate in certificates.go does the same for unusable certificates.)
func (r *Reconciler) refuse(s *scope, component, reason string, err error) error {
	refused := outcome.Stop(reason, err)
	msg := refused.Error()
	if st := s.componentStatus(component); st == nil || st.Reason != reason || st.Message != msg {
		r.event(s.cp, corev1.EventTypeWarning, reason, msg)
	}
	s.announce(msg)
	return refused
}
