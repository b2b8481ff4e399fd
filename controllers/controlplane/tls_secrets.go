package controlplane

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// tlsSecretSpec describes one kubernetes.io/tls Secret the ControlPlane issues: a self-signed CA
// when caName is empty, otherwise a leaf signed by the CA Secret caName for hosts. annotations
// go on the Secret (the NATS server Secrets record their replica count).
type tlsSecretSpec struct {
	name, commonName string
	caName           string
	hosts            []string
	annotations      map[string]string
}

func (t tlsSecretSpec) isCA() bool { return t.caName == "" }

// tlsSecret is the kubernetes.io/tls Secret of spec, owned by the ControlPlane.
func tlsSecret(cp *datasancev3.ControlPlane, component string, spec tlsSecretSpec, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	m := metaFor(cp, component, spec.name)
	secret := corev1ac.Secret(m.name, m.namespace).
		WithLabels(m.labels).
		WithOwnerReferences(ownerReference(cp)).
		WithType(corev1.SecretTypeTLS).
		WithData(data)
	if len(spec.annotations) > 0 {
		secret.WithAnnotations(spec.annotations)
	}
	return secret
}
