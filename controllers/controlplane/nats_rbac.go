package controlplane

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// emptyLegacyNatsRole removes the rules of Role nats when this ControlPlane controls one: an
// earlier operator version created it with get/list/watch on every ConfigMap and Secret of the
// namespace, which the NATS pods never used (resources.NatsRoleName, docs/controlplane.md#operand-rbac).
// The Role and its RoleBinding stay, granting nothing, until the ControlPlane's deletion
// garbage-collects them: the operator holds no delete on RBAC objects, and patch is enough to
// take the permissions away. A Role the ControlPlane does not control is left alone, and a Role
// already without rules is not written (one cached read per pass).
func (r *Reconciler) emptyLegacyNatsRole(ctx context.Context, s *scope) error {
	role := &rbacv1.Role{}
	found, err := r.getExisting(ctx, s, resources.NatsRoleName, role)
	if err != nil || !found || !isControlledBy(role, s.cp.UID) || len(role.Rules) == 0 {
		return err
	}
	base := role.DeepCopy()
	role.Rules = nil
	if err := r.Patch(ctx, role, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); err != nil {
		return outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("empty Role %s: %w", resources.NatsRoleName, err))
	}
	ctrl.LoggerFrom(ctx).Info("Removed the rules of an earlier version's NATS Role: the NATS pods use no Kubernetes API", "Role", klog.KRef(s.namespace(), resources.NatsRoleName))
	r.event(s.cp, corev1.EventTypeNormal, eventNatsRoleEmptied,
		fmt.Sprintf("Removed the rules of Role %s: the NATS pods read their files from mounted volumes and need no API access.", resources.NatsRoleName))
	return nil
}
