package controlplane_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// NATS exposed through ingresses.nats: no load balancer to wait for; the address goes into the
// SANs, leafnodes.advertise (with the ingress leaf port) and the hub registration, whose zero
// ports default.
func TestNatsIngressAddress(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.create(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2), testfixture.WithNATSClusterIP(), testfixture.WithNATSIngress(datasancev3.NatsIngress{
		Address: "nats.example.com", LeafPort: 443, ServerPort: 4443,
	})))
	h.mustRequeue(controlplane.RequeueTransition)
	// Router and Controller wait for their load balancers (10 s); NATS does not: it creates its
	// StatefulSet at once and waits for the rollout (5 s), which the pass comes back for.
	h.mustRequeue(controlplane.RequeueWorkload)
	g.Expect(h.get().Status.Nats.Ready).To(BeFalse())
	g.Expect(h.get().Status.Nats.Reason).To(Equal(datasancev3.ReasonWorkloadUnavailable))
	g.Expect(h.get().Status.Nats.Address).To(Equal("nats.example.com"))

	for _, name := range []string{"nats", "nats-server"} {
		svc := h.service(name)
		g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
		g.Expect(svc.Spec.ExternalTrafficPolicy).To(BeEmpty())
	}
	g.Expect(h.certificate("nats-site-server").DNSNames).To(Equal(natsSANs(h.ns, 2, "nats.example.com")))
	g.Expect(h.certificate("nats-mqtt-server").DNSNames).To(Equal(natsSANs(h.ns, 2, "nats.example.com")))
	g.Expect(h.serverConf()["leafnodes"]).To(HaveKeyWithValue("advertise", "nats.example.com:443"))

	// The NATS pods run and the load balancers get their addresses: NATS is done, the router and
	// Controller Deployments are created; once they run, the pass is ready.
	h.finishRollouts()
	h.setServiceAddress("router", routerLBIP)
	h.setServiceAddress("controller", h.controllerLB)
	h.mustRequeue(controlplane.RequeueDeploymentCreated)
	g.Expect(h.get().Status.Nats.Ready).To(BeTrue())
	h.finishRollouts()
	h.mustBeReady()
	hub := h.api.RequestsTo("PUT", "/api/v3/nats/hub")
	g.Expect(hub).To(HaveLen(1))
	g.Expect(hub[0].Body).To(MatchJSON(`{"host":"nats.example.com","serverPort":4443,"clusterPort":6222,"leafPort":443,"mqttPort":8883,"httpPort":8222}`))
}

// Neither a LoadBalancer nor an ingress address: in-cluster SANs only, no leaf advertise, and the
// hub registration is skipped (docs/controlplane.md#hub-registration-without-an-address) while the NATS CAs are still imported.
func TestNatsNoExternalAddress(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2), testfixture.WithNATSClusterIP()))

	g.Expect(h.api.RequestsTo("PUT", "/api/v3/nats/hub")).To(BeEmpty())
	_, registered := h.api.Hub()
	g.Expect(registered).To(BeFalse())
	g.Expect(h.api.ImportedCAs()).To(ContainElements("nats-site-ca", "default-nats-local-ca"))
	g.Expect(h.get().Status.Nats.Address).To(BeEmpty())
	g.Expect(h.certificate("nats-site-server").DNSNames).To(Equal(natsSANs(h.ns, 2)))
	g.Expect(h.certificate("nats-site-server").IPAddresses).To(BeEmpty())
	g.Expect(h.serverConf()["leafnodes"]).NotTo(HaveKey("advertise"))
}

// Service type and traffic policy follow spec.services.nats / natsServer, with annotations.
func TestNatsServiceSettings(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Nats = &datasancev3.ServiceSpec{
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			Annotations:           map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
		}
		cp.Spec.Services.NatsServer = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeNodePort}
	}))
	natsSvc := h.service("nats")
	g.Expect(natsSvc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
	g.Expect(natsSvc.Spec.ExternalTrafficPolicy).To(Equal(corev1.ServiceExternalTrafficPolicyCluster))
	g.Expect(natsSvc.Annotations).To(HaveKeyWithValue("service.beta.kubernetes.io/aws-load-balancer-type", "nlb"))
	server := h.service("nats-server")
	g.Expect(server.Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
	g.Expect(server.Spec.ExternalTrafficPolicy).To(Equal(corev1.ServiceExternalTrafficPolicyCluster))
}

// The NATS monitor answers without authentication: Service nats-server, a load balancer by
// default, carries only the client port, and the monitor stays in the cluster on nats-headless.
// A nats-server an earlier version applied with the monitor loses it on the next pass;
// spec.nats.exposeMonitor puts it back.
func TestNatsMonitorStaysInTheCluster(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	ports := func(name string) map[string]int32 {
		out := map[string]int32{}
		for _, p := range h.service(name).Spec.Ports {
			out[p.Name] = p.Port
		}
		return out
	}
	g.Expect(h.service("nats-server").Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
	g.Expect(ports("nats-server")).To(Equal(map[string]int32{"client": 4222}))
	g.Expect(ports("nats-headless")).To(HaveKeyWithValue("monitor", int32(8222)))

	earlier := corev1ac.Service("nats-server", h.ns).WithSpec(corev1ac.ServiceSpec().WithPorts(
		corev1ac.ServicePort().WithName("client").WithPort(4222).WithProtocol(corev1.ProtocolTCP),
		corev1ac.ServicePort().WithName("monitor").WithPort(8222).WithProtocol(corev1.ProtocolTCP)))
	g.Expect(env.Client.Apply(h.ctx, earlier, client.FieldOwner(controlplane.FieldOwner), client.ForceOwnership)).To(Succeed())
	g.Expect(ports("nats-server")).To(HaveKey("monitor"))
	h.mustBeReady()
	g.Expect(ports("nats-server")).To(Equal(map[string]int32{"client": 4222}), "the pass removed the monitor")

	h.update(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{ExposeMonitor: true} })
	h.mustRequeue(controlplane.RequeueTransition)
	h.mustBeReady()
	g.Expect(ports("nats-server")).To(Equal(map[string]int32{"client": 4222, "monitor": 8222}))
}
