package resources

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// What the Datasance iofog-operator (releases 3.6.0 to 3.7.x) writes differently, as far as
// taking its place needs (docs/controlplane.md#taking-over-from-the-datasance-operator): the same
// object names, but app.kubernetes.io/name pot and one more label, datasance.com/component, on
// every object, and every label of a workload's pods in its (immutable) selector — the router's
// three Skupper labels included.
const (
	// LabelDatasanceComponent is on every object the Datasance operator writes. Server-side apply
	// leaves it on the objects this operator takes over (it is the other writer's field), so a
	// component's Service that carries it tells that the Datasance operator ran the component.
	LabelDatasanceComponent = "datasance.com/component"
	datasanceNameValue      = "pot"

	// LegacyControllerIngressName is the Datasance operator's Controller Ingress (this operator's is
	// controller, as the upstream documentation names it).
	LegacyControllerIngressName = "pot-controller"

	// AnnotationTakingOver on this operator's Deployment or StatefulSet records that pods of the
	// Datasance operator's workload of the same name may still run: while it is there, every pass
	// looks for them and retires them once this operator's pods can take their place. It is
	// removed when none is left.
	AnnotationTakingOver = "kubeopera.io/taking-over-from"
	takingOverValue      = "datasance-iofog-operator"
)

// routerPodLabels are the labels the router image's Skupper code looks for on its own pod; both
// operators put them on the router pods, the Datasance operator in its selector too.
var routerPodLabels = map[string]string{
	"application":          "interior-router",
	"skupper.io/component": "router",
	"skupper.io/type":      "site",
}

// WorkloadOrigin says whose a Deployment or StatefulSet of a component's name is.
type WorkloadOrigin int

// The origins ClassifyWorkload tells apart.
const (
	// WorkloadOurs selects the pods by this operator's selector.
	WorkloadOurs WorkloadOrigin = iota
	// WorkloadDatasance is the Datasance operator's: its exact selector, and controlled by this
	// ControlPlane or by nothing.
	WorkloadDatasance
	// WorkloadForeign is anything else: this operator neither changes nor deletes it.
	WorkloadForeign
)

// ClassifyWorkload tells whose the workload of component is, from its selector and its
// controller reference (nil: none).
func ClassifyWorkload(cp *datasancev3.ControlPlane, component string, selector *metav1.LabelSelector, controller *metav1.OwnerReference) WorkloadOrigin {
	if selector == nil || len(selector.MatchExpressions) > 0 {
		return WorkloadForeign
	}
	if maps.Equal(selector.MatchLabels, selectorLabels(cp.Name, component)) {
		return WorkloadOurs
	}
	if controller != nil && controller.UID != cp.UID {
		return WorkloadForeign
	}
	if maps.Equal(selector.MatchLabels, datasanceSelectorLabels(cp.Name, component)) {
		return WorkloadDatasance
	}
	return WorkloadForeign
}

// datasanceSelectorLabels is the Datasance operator's selector of a component's pods.
func datasanceSelectorLabels(instance, component string) map[string]string {
	l := map[string]string{
		labelName:               datasanceNameValue,
		labelInstance:           instance,
		labelComponent:          component,
		LabelManagedBy:          LabelManagedByValue,
		LabelDatasanceComponent: component,
	}
	if component == ComponentRouter {
		maps.Copy(l, routerPodLabels)
	}
	return l
}

// DatasancePodLabels select the pods (and ReplicaSets) the Datasance operator's workload of a
// component left, and none of this operator's: this operator's never carry datasance.com/component.
func DatasancePodLabels(instance, component string) map[string]string {
	return map[string]string{
		labelName:               datasanceNameValue,
		labelInstance:           instance,
		LabelDatasanceComponent: component,
	}
}

// HandoverSelector selects a component's pods of both operators: the labels they share.
func HandoverSelector(instance, component string) map[string]string {
	return map[string]string{labelInstance: instance, labelComponent: component}
}

// SelectDuringHandover makes svc select the component's pods of both operators, so that the
// Datasance operator's keep serving until this operator's are ready. The selector is atomic: the
// apply replaces it whole, and narrows it again once the handover is over.
func SelectDuringHandover(svc *corev1ac.ServiceApplyConfiguration, instance, component string) {
	if svc.Spec == nil {
		svc.WithSpec(corev1ac.ServiceSpec())
	}
	svc.Spec.Selector = HandoverSelector(instance, component)
}

// MarkDeploymentTakingOver sets AnnotationTakingOver on a Deployment.
func MarkDeploymentTakingOver(d *appsv1ac.DeploymentApplyConfiguration) {
	d.WithAnnotations(map[string]string{AnnotationTakingOver: takingOverValue})
}

// MarkStatefulSetTakingOver sets AnnotationTakingOver on a StatefulSet.
func MarkStatefulSetTakingOver(s *appsv1ac.StatefulSetApplyConfiguration) {
	s.WithAnnotations(map[string]string{AnnotationTakingOver: takingOverValue})
}
