package controlplane

import "github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"

// OwnedLabels are the labels every object the ControlPlane reconciler creates carries (a subset
// of resources.StandardLabels). The manager selects its caches of Secrets and ConfigMaps by them, so
// unrelated objects of the cluster are not cached.
func OwnedLabels() map[string]string {
	return map[string]string{resources.LabelManagedBy: resources.LabelManagedByValue}
}
