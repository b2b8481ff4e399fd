package resources

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// NATS access to the Kubernetes API (docs/controlplane.md#operand-rbac): none. The NATS image
// (Datasance nats-server, every version) is a file-watching wrapper around nats-server with no
// Kubernetes client; it reads server.conf, the JWT bundle, the hub creds, the JetStream key and
// its certificates from the volumes the kubelet mounts, and the kubelet reads mounted Secrets
// and ConfigMaps with its own node credentials, not the pod's ServiceAccount. So ServiceAccount
// nats gets no Role and no RoleBinding, and the NATS pods mount no ServiceAccount token
// (NatsStatefulSet). An earlier operator version created Role nats with get/list/watch on every
// ConfigMap and Secret of the namespace; the reconciler empties such a Role (NatsRoleName).

// NatsRoleName is the Role (and RoleBinding) name an earlier operator version created for NATS.
// The operator no longer creates either; it removes the rules of an owned Role of this name.
const NatsRoleName = natsServiceAccountName

// NatsAccessMeta is the metadata of ServiceAccount nats.
func NatsAccessMeta(cp *datasancev3.ControlPlane) ObjectMeta {
	return MetaFor(cp, ComponentNats, natsServiceAccountName)
}

// NatsServiceAccount is ServiceAccount nats, with the image pull Secret when one is set. It is
// the pods' identity only: nothing grants it any permission.
func NatsServiceAccount(cp *datasancev3.ControlPlane) *corev1ac.ServiceAccountApplyConfiguration {
	return ServiceAccount(NatsAccessMeta(cp), cp.Spec.Images.PullSecret)
}
