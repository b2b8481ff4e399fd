package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// natsPort is one NATS port (docs/controlplane.md#nats-ports). The ports are fixed: ingresses.nats.*Port only tell the
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

// NatsHeadlessService is Service nats-headless: clusterIP None, all five ports, the pod DNS names
// nats-<i>.nats-headless the routes and SANs use. Not-ready pods are published (as the
// NATS Helm chart does) so that servers find each other while they start: readiness needs
// JetStream, which needs the route mesh.
func NatsHeadlessService(cp *datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(NatsHeadlessServiceName, cp.Namespace).
		WithLabels(StandardLabels(cp.Name, ComponentNats)).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selectorLabels(cp.Name, ComponentNats)).
			WithPorts(natsServicePorts(natsClientPort, natsClusterPort, natsLeafPort, natsMQTTPort, natsMonitorPort)...))
}

// NatsService is Service nats: cluster, leaf and MQTT, typed by spec.services.nats. Its address
// is the external NATS address (docs/controlplane.md#external-nats-address).
func NatsService(cp *datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration {
	return natsExposedService(cp, NatsServiceName, cp.Spec.Services.Nats, natsClusterPort, natsLeafPort, natsMQTTPort)
}

// NatsServerService is Service nats-server, typed by spec.services.natsServer: the client port,
// and the monitor only when spec.nats.exposeMonitor asks for it. The monitor has no
// authentication and this Service is a load balancer by default, so in-cluster readers (probes,
// Prometheus) use Service nats-headless, which always has it.
func NatsServerService(cp *datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration {
	ports := []natsPort{natsClientPort}
	if cp.Spec.Nats != nil && cp.Spec.Nats.ExposeMonitor {
		ports = append(ports, natsMonitorPort)
	}
	return natsExposedService(cp, NatsServerServiceName, cp.Spec.Services.NatsServer, ports...)
}

// natsExposedService is a NATS Service exposed as the Service block says. services.*.address is
// honoured on the controller block only.
func natsExposedService(cp *datasancev3.ControlPlane, name string, block *datasancev3.ServiceSpec, ports ...natsPort) *corev1ac.ServiceApplyConfiguration {
	return exposedService(cp, ComponentNats, name, block, natsServicePorts(ports...)...)
}

func natsServicePorts(ports ...natsPort) []*corev1ac.ServicePortApplyConfiguration {
	out := make([]*corev1ac.ServicePortApplyConfiguration, 0, len(ports))
	for _, p := range ports {
		out = append(out, servicePort(p.name, p.port, intstr.FromInt32(p.port)))
	}
	return out
}
