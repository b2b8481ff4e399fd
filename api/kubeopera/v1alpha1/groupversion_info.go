// Package v1alpha1 contains the KubeOperaApp API (group kubeopera.io, version v1alpha1): one
// tenant application, delivered into a tenant vCluster through Git and Flux.
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
	// GroupVersion is the group and version of the KubeOperaApp API.
	GroupVersion = schema.GroupVersion{Group: "kubeopera.io", Version: "v1alpha1"}

	// SchemeBuilder registers the KubeOperaApp types with a runtime scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the KubeOperaApp types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the API's kinds with a scheme.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &KubeOperaApp{}, &KubeOperaAppList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
