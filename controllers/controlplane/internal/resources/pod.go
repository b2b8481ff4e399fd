package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// envValue is a literal environment variable. An empty value is left out, as the API server
// stores it, so that comparing with the live object sees no difference.
func envValue(name, value string) *corev1ac.EnvVarApplyConfiguration {
	e := corev1ac.EnvVar().WithName(name)
	if value != "" {
		e.WithValue(value)
	}
	return e
}

// envField is an environment variable from the downward API.
func envField(name, fieldPath string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
		WithFieldRef(corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath(fieldPath)))
}

// envSecret is an environment variable read from a Secret key, so the value never appears in
// the pod spec.
func envSecret(name, secret, key string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
		WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(secret).WithKey(key)))
}

// secretVolume mounts a whole Secret.
func secretVolume(volume, secret string) *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(volume).WithSecret(corev1ac.SecretVolumeSource().WithSecretName(secret))
}

// metaLabelSelector selects pods by labels.
func metaLabelSelector(labels map[string]string) *metav1ac.LabelSelectorApplyConfiguration {
	return metav1ac.LabelSelector().WithMatchLabels(labels)
}

// servicePort is a TCP Service port.
func servicePort(name string, port int32, target intstr.IntOrString) *corev1ac.ServicePortApplyConfiguration {
	return corev1ac.ServicePort().WithName(name).WithProtocol(corev1.ProtocolTCP).WithPort(port).WithTargetPort(target)
}

// containerPort is a TCP container port, the one builder of every component's ports.
func containerPort(name string, port int32) *corev1ac.ContainerPortApplyConfiguration {
	return corev1ac.ContainerPort().WithName(name).WithContainerPort(port).WithProtocol(corev1.ProtocolTCP)
}
