package conversation

import (
	"testing"

	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

func TestRouterRegistration(t *testing.T) {
	g := NewWithT(t)
	lb := testfixture.ControlPlane()
	g.Expect(routerRegistration(&lb.Spec, "1.2.3.4")).To(Equal(iofog.Router{Host: "1.2.3.4", MessagingPort: 5671, InterRouterPort: 55671, EdgeRouterPort: 45671}))
	lb.Spec.Ingresses.Router = &datasancev3.RouterIngress{MessagePort: 1}
	g.Expect(routerRegistration(&lb.Spec, "1.2.3.4").MessagingPort).To(Equal(5671), "LoadBalancer path ignores ingress ports")

	in := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Router = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeNodePort}
		cp.Spec.Ingresses.Router = &datasancev3.RouterIngress{Address: "r.example.com", EdgePort: 30001}
	})
	g.Expect(routerRegistration(&in.Spec, "r.example.com")).To(Equal(iofog.Router{Host: "r.example.com", MessagingPort: 5671, InterRouterPort: 55671, EdgeRouterPort: 30001}))
}

func TestNatsHub(t *testing.T) {
	cases := []struct {
		name string
		ing  *datasancev3.NatsIngress
		want iofog.NatsHub
	}{
		{"no ingress block: defaults", nil, iofog.NatsHub{Host: "h", ServerPort: 4222, ClusterPort: 6222, LeafPort: 7422, MqttPort: 8883, HTTPPort: 8222}},
		{"some ports", &datasancev3.NatsIngress{Address: "ignored", LeafPort: 443, HTTPPort: 8080},
			iofog.NatsHub{Host: "h", ServerPort: 4222, ClusterPort: 6222, LeafPort: 443, MqttPort: 8883, HTTPPort: 8080}},
		{"all ports", &datasancev3.NatsIngress{ServerPort: 1, ClusterPort: 2, LeafPort: 3, MqttPort: 4, HTTPPort: 5},
			iofog.NatsHub{Host: "h", ServerPort: 1, ClusterPort: 2, LeafPort: 3, MqttPort: 4, HTTPPort: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) { cp.Spec.Ingresses.Nats = tc.ing })
			NewWithT(t).Expect(*natsHub(&cp.Spec, "h")).To(Equal(tc.want))
		})
	}
}
