package resources

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// TLSSecretSpec describes one kubernetes.io/tls Secret the ControlPlane issues (router and NATS,
// docs/controlplane.md#tls): a self-signed CA when CAName is empty, otherwise a leaf
// signed by the CA Secret CAName for Hosts. Annotations go on the Secret (the NATS server Secrets
// record their replica count).
type TLSSecretSpec struct {
	Name, CommonName string
	CAName           string
	Hosts            []string
	Annotations      map[string]string
}

// IsCA reports whether the Secret is a self-signed CA.
func (t TLSSecretSpec) IsCA() bool { return t.CAName == "" }

// TLSSecret is the kubernetes.io/tls Secret of spec holding data: the one builder of every CA and
// leaf Secret. It is created with Create (never overwriting a Secret a stale cache did not show)
// and, for a renewed leaf, applied under the resourceVersion read. A leaf is owned by the
// ControlPlane; a CA is not: the Controller's database holds it and has signed its agents'
// certificates with it, so it lives as long as that database (docs/controlplane.md#data-on-deletion).
func TLSSecret(cp *datasancev3.ControlPlane, component string, spec TLSSecretSpec, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	secret := Secret(cp, component, spec.Name, corev1.SecretTypeTLS, data)
	if spec.IsCA() {
		secret.OwnerReferences = nil
	}
	if len(spec.Annotations) > 0 {
		secret.WithAnnotations(spec.Annotations)
	}
	return secret
}
