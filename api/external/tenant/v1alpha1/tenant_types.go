// Package v1alpha1 mirrors the parts of the tenant-controller's Tenant API (kubeopera.io/v1alpha1)
// that this operator reads. The operator does not own this CRD: its schema here is only what tests
// install as a fixture (test/crds), and the OLM bundle never ships it.
//
// +kubebuilder:object:generate=true
// +groupName=kubeopera.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion of the Tenant API.
	GroupVersion = schema.GroupVersion{Group: "kubeopera.io", Version: "v1alpha1"}

	// SchemeBuilder registers the Tenant types.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the Tenant types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// CloudSpaceLabel is the CloudSpace ownership label on a Tenant: the isolation boundary between
// customers.
const CloudSpaceLabel = "kubeopera.io/cloudspace-id"

// ConditionReady is the Tenant condition that says its vCluster is usable.
const ConditionReady = "Ready"

// KubeconfigSecretReference names the Secret holding the vCluster's exported kubeconfig.
type KubeconfigSecretReference struct {
	// Name of the Secret in the Tenant's namespace.
	Name string `json:"name"`
	// Key in the Secret; default config.
	// +optional
	Key string `json:"key,omitempty"`
}

// TenantSpec is opaque to this operator.
type TenantSpec struct {
	// CloudSpaceID of the Tenant's CloudSpace.
	// +optional
	CloudSpaceID string `json:"cloudSpaceId,omitempty"`
}

// TenantStatus is what the operator reads.
type TenantStatus struct {
	// Conditions, among them Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// KubeconfigSecretRef names the exported kubeconfig Secret; when absent the vcluster
	// convention applies: Secret vc-<tenant name>, key config.
	// +optional
	KubeconfigSecretRef *KubeconfigSecretReference `json:"kubeconfigSecretRef,omitempty"`
}

// Tenant is a customer's vCluster, managed by the tenant-controller.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TenantSpec `json:"spec,omitempty"`
	// +optional
	Status TenantStatus `json:"status,omitempty"`
}

// TenantList is a list of Tenants.
//
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

// addKnownTypes registers the API's kinds with a scheme.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Tenant{}, &TenantList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
