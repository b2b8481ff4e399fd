package resources

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// NatsOperatorSeedSecret is Secret nats-operator-seed: the NATS operator seed from the bootstrap
// (docs/controlplane.md#nats-bootstrap). It is rewritten from each bootstrap answer.
func NatsOperatorSeedSecret(cp *datasancev3.ControlPlane, seed string) *corev1ac.SecretApplyConfiguration {
	return Secret(cp, ComponentNats, NatsOperatorSeedSecretName, corev1.SecretTypeOpaque, map[string][]byte{NatsOperatorSeedKey: []byte(seed)})
}

// NatsSysCredsSecret is Secret nats-creds-sys-admin-hub: the hub system user's decoded .creds
// file from the bootstrap (docs/controlplane.md#nats-bootstrap), mounted into the NATS pods.
func NatsSysCredsSecret(cp *datasancev3.ControlPlane, creds []byte) *corev1ac.SecretApplyConfiguration {
	return Secret(cp, ComponentNats, NatsSysCredsSecretName, corev1.SecretTypeOpaque, map[string][]byte{NatsSysCredsKey: creds})
}

// NatsJetStreamKeySecret is Secret nats-jetstream-key-<name> with the JetStream encryption key
// (docs/controlplane.md#jetstream-encryption-key). It is created once (Create, like NatsTLSSecret): a new key would make the stored
// streams unreadable.
func NatsJetStreamKeySecret(cp *datasancev3.ControlPlane, jsk string) *corev1.Secret {
	meta := natsCreateOnceMeta(cp, NatsJetStreamKeySecretName(cp.Name))
	// No owner reference: the key reads the retained JetStream PVCs (data policy in the
	// package doc).
	meta.OwnerReferences = nil
	return &corev1.Secret{
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{NatsJetStreamKeyKey: []byte(jsk)},
	}
}

// NatsTLSSecret is one of the four NATS TLS Secrets (docs/controlplane.md#nats-tls-secrets) with the data of pki.SecretData.
// replicas > 0 marks a server Secret with the replica count its SANs cover.
//
// It is a typed object, not an apply configuration, because it is written with Create: a
// certificate is created once and an existing one (a bring-your-own CA, or one a stale cache did
// not show yet) must never be overwritten, which a server-side apply would do.
func NatsTLSSecret(cp *datasancev3.ControlPlane, name string, data map[string][]byte, replicas int32) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: natsCreateOnceMeta(cp, name),
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
	if replicas > 0 {
		s.Annotations = map[string]string{AnnotationNatsReplicas: strconv.Itoa(int(replicas))}
	}
	return s
}

// natsCreateOnceMeta is the metadata of an object written with Create: standard labels and the
// controller reference (the same as ownerReference).
func natsCreateOnceMeta(cp *datasancev3.ControlPlane, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       cp.Namespace,
		Labels:          StandardLabels(cp.Name, ComponentNats),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cp, datasancev3.GroupVersion.WithKind("ControlPlane"))},
	}
}
