// Package v1alpha1 contains the KubeOperaApp API (group kubeopera.io, version v1alpha1): one
// tenant application, delivered into a tenant vCluster through Git and Flux.
//
// +kubebuilder:object:generate=true
// +groupName=kubeopera.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the KubeOperaApp API.
	GroupVersion = schema.GroupVersion{Group: "kubeopera.io", Version: "v1alpha1"}

	// SchemeBuilder registers the KubeOperaApp types with a runtime scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the KubeOperaApp types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
