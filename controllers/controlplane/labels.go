package controlplane

import (
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// standardLabels are the labels of every object of a component (spec §4.1). They double as pod
// selectors, so they must stay stable: Deployment selectors are immutable.
func standardLabels(instance, component string) map[string]string {
	return map[string]string{
		labelName:      labelNameValue,
		labelInstance:  instance,
		labelComponent: component,
		labelManagedBy: labelManagedByValue,
	}
}

// selectorLabels select the pods of a component. managed-by is left out so that a change of
// manager never needs a new selector.
func selectorLabels(instance, component string) map[string]string {
	return map[string]string{
		labelName:      labelNameValue,
		labelInstance:  instance,
		labelComponent: component,
	}
}

// ownerReference is the controller reference to cp on every object it owns; deleting the
// ControlPlane garbage-collects them.
func ownerReference(cp *datasancev3.ControlPlane) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(datasancev3.GroupVersion.String()).
		WithKind("ControlPlane").
		WithName(cp.Name).
		WithUID(cp.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// mergeMaps returns the union of maps; later maps win. It returns nil when all are empty, so an
// apply configuration never carries an empty map.
func mergeMaps(maps ...map[string]string) map[string]string {
	var out map[string]string
	for _, m := range maps {
		for k, v := range m {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}
