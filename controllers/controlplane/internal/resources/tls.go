package resources

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// TLSSecretSpec describes one generated kubernetes.io/tls Secret: a self-signed CA when CAName
// is empty, otherwise a leaf signed by the CA Secret CAName for hosts.
type TLSSecretSpec struct {
	Name, CommonName string
	CAName           string
	Hosts            []string
}

// IsCA reports whether the Secret is a self-signed CA.
func (t TLSSecretSpec) IsCA() bool { return t.CAName == "" }

// TLSSecret is a kubernetes.io/tls Secret owned by the ControlPlane.
func TLSSecret(cp *datasancev3.ControlPlane, component, name string, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	m := MetaFor(cp, component, name)
	return corev1ac.Secret(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(cp)).
		WithType(corev1.SecretTypeTLS).
		WithData(data)
}
