package controlplane

import (
	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// natsAccessMeta is the metadata of ServiceAccount, Role and RoleBinding nats.
func natsAccessMeta(cp *datasancev3.ControlPlane) objectMeta {
	return metaFor(cp, componentNats, natsServiceAccountName)
}

// natsServiceAccount is ServiceAccount nats, with the image pull Secret when one is set.
func natsServiceAccount(cp *datasancev3.ControlPlane) *corev1ac.ServiceAccountApplyConfiguration {
	return serviceAccount(natsAccessMeta(cp), cp.Spec.Images.PullSecret)
}

// natsRole is Role nats: read ConfigMaps and Secrets (spec §6.1).
func natsRole(cp *datasancev3.ControlPlane) *rbacv1ac.RoleApplyConfiguration {
	return role(natsAccessMeta(cp), rbacv1.PolicyRule{
		APIGroups: []string{""},
		Resources: []string{"configmaps", "secrets"},
		Verbs:     verbsRead,
	})
}

// natsRoleBinding binds Role nats to ServiceAccount nats.
func natsRoleBinding(cp *datasancev3.ControlPlane) *rbacv1ac.RoleBindingApplyConfiguration {
	return roleBinding(natsAccessMeta(cp))
}
