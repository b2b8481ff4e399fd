package testfixture

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// WithPods sets spec.pods.
func WithPods(pods datasancev3.Pods) Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Pods = pods }
}

// ResourceList is a resource list of name, quantity pairs.
func ResourceList(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// CompletePodSettings sets every pod setting to a value distinct from the operator's defaults,
// named after component so each component's settings can be told apart.
func CompletePodSettings(component string) *datasancev3.PodSettings {
	return &datasancev3.PodSettings{
		Resources: &datasancev3.Resources{
			Requests: ResourceList("cpu", "250m", "memory", "300Mi"),
			Limits:   ResourceList("cpu", "2", "memory", "3Gi"),
		},
		NodeSelector: map[string]string{"example.com/pool": component},
		Tolerations: []corev1.Toleration{{
			Key: "example.com/dedicated", Operator: corev1.TolerationOpEqual, Value: component, Effect: corev1.TaintEffectNoSchedule,
		}},
		Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"},
				}},
			}}},
		}},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "example.com/rack", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/component": component}},
		}},
		PriorityClassName: component + "-critical",
	}
}

// CompletePods sets every pod setting of every component (CompletePodSettings).
func CompletePods() datasancev3.Pods {
	return datasancev3.Pods{
		Controller: CompletePodSettings("controller"),
		Router:     CompletePodSettings("router"),
		Nats:       CompletePodSettings("nats"),
	}
}
