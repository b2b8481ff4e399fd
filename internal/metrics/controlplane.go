package metrics

import (
	"crypto/x509"
	"encoding/pem"
	"time"
)

// Outcomes of a ControlPlane component pass.
const (
	OutcomeContinue = "continue"
	OutcomeRequeue  = "requeue"
	OutcomeError    = "error"
)

// ObserveComponentPass records one pass of a ControlPlane component: its outcome (OutcomeContinue,
// OutcomeRequeue or OutcomeError) and the condition reason it ended with, which replaces the
// component's previous reason series.
func ObserveComponentPass(namespace, name, component, outcome, reason string) {
	std.observeComponentPass(namespace, name, component, outcome, reason)
}

func (s *set) observeComponentPass(namespace, name, component, outcome, reason string) {
	s.componentPasses.WithLabelValues(component, outcome).Inc()
	key := componentKey{controlPlaneKey{namespace, name}, component}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.reasons[key]; ok && prev != reason {
		s.componentReason.DeleteLabelValues(namespace, name, component, prev)
	}
	s.reasons[key] = reason
	s.componentReason.WithLabelValues(namespace, name, component, reason).Set(1)
}

// SetRegistered records whether the ControlPlane's registration with its Controller is complete.
func SetRegistered(namespace, name string, registered bool) {
	std.setRegistered(namespace, name, registered)
}

func (s *set) setRegistered(namespace, name string, registered bool) {
	v := 0.0
	if registered {
		v = 1
	}
	s.registered.WithLabelValues(namespace, name).Set(v)
}

// ObserveCertificates records the notAfter of the first certificate in the tls.crt (key certKey)
// of each Secret in secrets (Secret name → data), the TLS Secrets one component of the
// ControlPlane uses. Data that holds no parsable certificate is skipped: the reconciler reports
// it through its own condition.
func ObserveCertificates(namespace, name string, secrets map[string]map[string][]byte, certKey string) {
	std.observeCertificates(namespace, name, secrets, certKey)
}

func (s *set) observeCertificates(namespace, name string, secrets map[string]map[string][]byte, certKey string) {
	for secret, data := range secrets {
		notAfter, ok := certificateNotAfter(data[certKey])
		if !ok {
			continue
		}
		s.certExpiry.WithLabelValues(namespace, name, secret).Set(float64(notAfter.Unix()))
	}
}

// certificateNotAfter returns the notAfter of the first PEM certificate in data.
func certificateNotAfter(data []byte) (time.Time, bool) {
	for len(data) > 0 {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return time.Time{}, false
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return time.Time{}, false
		}
		return cert.NotAfter, true
	}
	return time.Time{}, false
}

// ForgetControlPlane deletes every series of the ControlPlane (it was deleted).
func ForgetControlPlane(namespace, name string) { std.forgetControlPlane(namespace, name) }

func (s *set) forgetControlPlane(namespace, name string) {
	labels := map[string]string{controlPlaneNamespaceLabel: namespace, controlPlaneNameLabel: name}
	s.componentReason.DeletePartialMatch(labels)
	s.registered.DeletePartialMatch(labels)
	s.certExpiry.DeletePartialMatch(labels)
	key := controlPlaneKey{namespace, name}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.reasons {
		if k.controlPlaneKey == key {
			delete(s.reasons, k)
		}
	}
}
