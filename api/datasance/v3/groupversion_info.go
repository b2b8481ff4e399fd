// Package v3 contains the ControlPlane API (group datasance.com, version v3): one Datasance PoT /
// Eclipse ioFog control plane (Controller, Router and NATS) per object, deployed into the object's
// namespace.
//
// +kubebuilder:object:generate=true
// +groupName=datasance.com
package v3

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the ControlPlane API.
	GroupVersion = schema.GroupVersion{Group: "datasance.com", Version: "v3"}

	// SchemeBuilder registers the ControlPlane types with a runtime scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the ControlPlane types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the API's kinds with a scheme.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ControlPlane{}, &ControlPlaneList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
