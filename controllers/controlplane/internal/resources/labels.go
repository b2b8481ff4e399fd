package resources

import (
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// Standard labels of every operand object, exactly the upstream operator's (managed-by:
// iofog-operator), so selectors, dashboards and policies written for upstream objects match
// this operator's and objects created by either operator are the same. The operator's own Deployment
// carries its own name.
const (
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"

	labelNameValue      = "iofog"
	LabelManagedByValue = "iofog-operator"
)

// Component names: the app.kubernetes.io/component label value and the object names of the
// Controller and Router components.
const (
	ComponentController = "controller"
	ComponentRouter     = "router"
	ComponentNats       = "nats"
)

// Annotations written by the operator.
const (
	// AnnotationCredentialsHash on the Controller pod template is a hash of the data of the DB,
	// auth and vault Secrets: a change rolls the pods so they read the new Secret-backed env.
	AnnotationCredentialsHash = "kubeopera.io/credentials-hash" //nolint:gosec // G101: an annotation name, not a credential.
	// AnnotationTLSHash on a pod template is a hash of the TLS Secret(s) the pods mount, so a
	// rotated certificate reaches the process.
	AnnotationTLSHash = "kubeopera.io/tls-hash"
	// AnnotationNatsConfigHash on the NATS pod template is natsconf.RestartKey of server.conf:
	// the settings nats-server cannot reload, so a change of them restarts the pods, while
	// routes and certificates are reloaded without one.
	AnnotationNatsConfigHash = "kubeopera.io/nats-config-hash"
	// AnnotationRegistration on the ControlPlane is a hash of what the operator last registered
	// with the Controller REST API (router, NATS hub, CAs) and where. While the ControlPlane is
	// ready and the hash is unchanged, the Controller API is not called again. A registration
	// that stops part-way removes it.
	AnnotationRegistration = "kubeopera.io/controller-registration"
)

// StandardLabels are the labels of every object of a component (docs/controlplane.md#labels). They double as pod
// selectors, so they must stay stable: Deployment selectors are immutable.
func StandardLabels(instance, component string) map[string]string {
	return map[string]string{
		labelName:      labelNameValue,
		labelInstance:  instance,
		labelComponent: component,
		LabelManagedBy: LabelManagedByValue,
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
