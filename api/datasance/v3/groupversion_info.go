// Package v3 contains the ControlPlane API (group datasance.com, version v3): one Datasance PoT /
// Eclipse ioFog control plane (Controller, Router and NATS) per object, deployed into the object's
// namespace.
//
// +kubebuilder:object:generate=true
// +groupName=datasance.com
package v3

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the ControlPlane API.
	GroupVersion = schema.GroupVersion{Group: "datasance.com", Version: "v3"}

	// SchemeBuilder registers the ControlPlane types with a runtime scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the ControlPlane types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
