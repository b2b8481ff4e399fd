package testfixture

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// WithNATS turns NATS on with its defaults (no NATS settings).
func WithNATS() Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = nil }
}

// WithoutNATS turns NATS off.
func WithoutNATS() Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{Enabled: ptr.To(false)} }
}

// WithNATSReplicas sets the number of NATS servers.
func WithNATSReplicas(n int32) Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To(n) }
}

// WithJetStream turns NATS on (by default) with the JetStream settings js, replacing every other
// NATS setting.
func WithJetStream(js datasancev3.JetStream) Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{JetStream: &js} }
}

// WithNATSIngress sets the address and ports NATS is reached at from outside the cluster.
func WithNATSIngress(ing datasancev3.NatsIngress) Mod {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Ingresses.Nats = &ing }
}

// WithNATSClusterIP exposes NATS without a load balancer: both NATS Services ClusterIP.
func WithNATSClusterIP() Mod {
	return func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Nats = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
		cp.Spec.Services.NatsServer = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
	}
}
