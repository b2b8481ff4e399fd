package resources

import (
	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// natsAccessMeta is the metadata of ServiceAccount, Role and RoleBinding nats.
func natsAccessMeta(cp *datasancev3.ControlPlane) ObjectMeta {
	return MetaFor(cp, ComponentNats, natsServiceAccountName)
}

// NatsServiceAccount is ServiceAccount nats, with the image pull Secret when one is set.
func NatsServiceAccount(cp *datasancev3.ControlPlane) *corev1ac.ServiceAccountApplyConfiguration {
	return ServiceAccount(natsAccessMeta(cp), cp.Spec.Images.PullSecret)
}

// NatsRole is Role nats: read ConfigMaps and Secrets (docs/controlplane.md#nats-objects).
func NatsRole(cp *datasancev3.ControlPlane) *rbacv1ac.RoleApplyConfiguration {
	return Role(natsAccessMeta(cp), rbacv1.PolicyRule{
		APIGroups: []string{""},
		Resources: []string{"configmaps", "secrets"},
		Verbs:     verbsRead,
	})
}

// NatsRoleBinding binds Role nats to ServiceAccount nats.
func NatsRoleBinding(cp *datasancev3.ControlPlane) *rbacv1ac.RoleBindingApplyConfiguration {
	return RoleBinding(natsAccessMeta(cp))
}
