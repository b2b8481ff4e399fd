package testbed

import (
	"context"
	"fmt"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API objects OpenShift installs that the SCC admission and the operator rely on, written as
// stand-ins: the SecurityContextConstraints API, served so that discovery and a RESTMapper find
// the kind (the operator tells OpenShift by it), and the ClusterRoles that grant the use of
// restricted-v2 and nonroot-v2, with restricted-v2's binding to every authenticated user. No
// SecurityContextConstraints object is stored: the admission's rules are scc.go's, not data.

// SCCGroup is the API group of OpenShift's SecurityContextConstraints (and of the "use" grants).
const SCCGroup = "security.openshift.io"

// sccCRD serves SecurityContextConstraints as OpenShift 4 does, with its names and scope
// (openshift/api, security/v1/zz_generated.crd-manifests/
// 0000_03_config-operator_01_securitycontextconstraints.crd.yaml); the schema keeps whatever an
// object holds instead of OpenShift's field by field one.
func sccCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "securitycontextconstraints." + SCCGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: SCCGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Kind: "SecurityContextConstraints", ListKind: "SecurityContextConstraintsList",
				Plural: "securitycontextconstraints", Singular: "securitycontextconstraints",
			},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// sccUseRole is the ClusterRole OpenShift ships for an SCC: use of that SCC, and nothing else
// (openshift/cluster-kube-apiserver-operator, bindata/bootkube/scc-manifests/
// 0000_20_kube-apiserver-operator_00_cr-scc-<name>.yaml). A RoleBinding to it in a namespace lets
// its subjects' pods there run under the SCC.
func sccUseRole(scc string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "system:openshift:scc:" + scc,
			Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
		},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{SCCGroup}, Resources: []string{"securitycontextconstraints"},
			ResourceNames: []string{scc}, Verbs: []string{"use"},
		}},
	}
}

// restrictedV2ForAll binds restricted-v2's ClusterRole to every authenticated user, which is what
// makes it every namespace's default (..._00_crb-systemauthenticated-scc-restricted-v2.yaml).
func restrictedV2ForAll() *rbacv1.ClusterRoleBinding {
	role := sccUseRole(restrictedV2.name).Name
	return &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}},
	}
}

// installOpenShiftAPI creates the SCC API and its RBAC, and returns once the API is served.
func installOpenShiftAPI(ctx context.Context, c client.Client) error {
	crd := sccCRD()
	for _, obj := range []client.Object{crd, sccUseRole(restrictedV2.name), sccUseRole(nonrootV2.name), restrictedV2ForAll()} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %s: %w", obj.GetName(), err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(crd), crd); err != nil {
			return false, err
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established {
				return cond.Status == apiextensionsv1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s to be established: %w", crd.Name, err)
	}
	return nil
}
