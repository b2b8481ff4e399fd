package controlplane

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// natsPort is one NATS port (spec §6.2). The ports are fixed: ingresses.nats.*Port only tell the
// Controller what agents should dial.
type natsPort struct {
	name string
	port int32
}

var (
	natsClientPort  = natsPort{"client", natsconf.ClientPort}
	natsClusterPort = natsPort{"cluster", natsconf.ClusterPort}
	natsLeafPort    = natsPort{"leaf", natsconf.LeafPort}
	natsMQTTPort    = natsPort{"mqtt", natsconf.MQTTPort}
	natsMonitorPort = natsPort{"monitor", natsconf.MonitorPort}
)

// natsHeadlessService is Service nats-headless: clusterIP None, all five ports, the pod DNS names
// nats-<i>.nats-headless the routes and SANs use. Not-ready pods are published (ours, as the
// NATS Helm chart does) so that servers find each other while they start: readiness needs
// JetStream, which needs the route mesh.
func natsHeadlessService(cp *datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(natsHeadlessServiceName, cp.Namespace).
		WithLabels(standardLabels(cp.Name, componentNats)).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selectorLabels(cp.Name, componentNats)).
			WithPorts(natsServicePorts(natsClientPort, natsClusterPort, natsLeafPort, natsMQTTPort, natsMonitorPort)...))
}

// natsService is Service nats: cluster, leaf and MQTT, typed by spec.services.nats. Its address
// is the external NATS address (spec §6.7).
func natsService(cp *datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration {
	return natsExposedService(cp, natsServiceName, cp.Spec.Services.Nats, natsClusterPort, natsLeafPort, natsMQTTPort)
}

// natsServerService is Service nats-server: client and monitor, typed by spec.services.natsServer.
func natsServerService(cp *datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration {
	return natsExposedService(cp, natsServerServiceName, cp.Spec.Services.NatsServer, natsClientPort, natsMonitorPort)
}

// natsExposedService is a NATS Service exposed as the Service block says. services.*.address is
// honoured on the controller block only.
func natsExposedService(cp *datasancev3.ControlPlane, name string, block *datasancev3.ServiceSpec, ports ...natsPort) *corev1ac.ServiceApplyConfiguration {
	return exposedService(cp, componentNats, name, block, natsServicePorts(ports...)...)
}

func natsServicePorts(ports ...natsPort) []*corev1ac.ServicePortApplyConfiguration {
	out := make([]*corev1ac.ServicePortApplyConfiguration, 0, len(ports))
	for _, p := range ports {
		out = append(out, servicePort(p.name, p.port, intstr.FromInt32(p.port)))
	}
	return out
}
