package controlplane

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// OpenShift admits pods through SecurityContextConstraints. Its default, restricted-v2, runs a
// pod as a UID from the namespace's range and refuses a fixed one. The router's image runs as
// any user, so the router pins no ID and restricted-v2 admits it. The Controller and NATS images
// keep their code and state in the home directory of user 10000, which no other user may enter
// (Datasance/Controller and Datasance/nats-server Dockerfiles: useradd --uid 10000
// --create-home on UBI 9, whose home directories are mode 0700): a UID from the range could not
// even start them. Their pods run as 10000, and on OpenShift their ServiceAccounts are bound to
// OpenShift's own ClusterRole for SCC nonroot-v2 (restricted-v2's rules, any non-root UID), in
// the ControlPlane's namespace only (docs/controlplane.md#pod-identity-and-openshift).

// sccGroupKind is OpenShift's SecurityContextConstraints.
var sccGroupKind = schema.GroupKind{Group: "security.openshift.io", Kind: "SecurityContextConstraints"}

// ServesSCC reports whether the cluster admits pods with OpenShift's SecurityContextConstraints:
// whether its API serves them. controllers.New asks once, at start.
func ServesSCC(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.RESTMapping(sccGroupKind, "v1")
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("discover %s: %w", sccGroupKind, err)
	}
}

// allowImageUser lets the pods of ServiceAccount m run as the image's user on OpenShift
// (resources.NonrootSCCRoleBinding, created once); elsewhere it does nothing.
func (r *Reconciler) allowImageUser(ctx context.Context, s *scope, m resources.ObjectMeta) error {
	if !r.Options.OpenShiftSCC {
		return nil
	}
	_, err := createIfAbsent(ctx, r, s, resources.NonrootSCCRoleBinding(m), &rbacv1.RoleBinding{})
	return err
}
