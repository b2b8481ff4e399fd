package controlplane

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// testImages are the operand images of the unit tests.
var testImages = Images{Controller: testfixture.ControllerImage, Router: testfixture.RouterImage, Nats: testfixture.NatsImage}

func TestRouterAddress(t *testing.T) {
	g := NewWithT(t)
	svc := &corev1.Service{}
	_, err := routerAddress(&testfixture.ControlPlane().Spec, svc)
	g.Expect(outcome.IsWait(err)).To(BeTrue(), "%v", err)
	wait, _ := outcome.Of(err)
	g.Expect(wait.After).To(Equal(requeueLoadBalancer))
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example.com"}}
	addr, err := routerAddress(&testfixture.ControlPlane().Spec, svc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(addr).To(Equal("lb.example.com"))

	// Not a LoadBalancer and no address: upstream's error text, terminal.
	cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Router = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
	})
	_, err = routerAddress(&cp.Spec, svc)
	g.Expect(err).To(MatchError(errMissingRouterAddress))
	g.Expect(outcome.IsTerminal(err)).To(BeTrue())
	g.Expect(reasonOf(err)).To(Equal(datasancev3.ReasonMissingRouterAddress))
}

func TestInternalControllerURL(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane()
	g.Expect(internalControllerURL("", cp)).To(Equal("http://controller.edge.svc.cluster.local:51121"))
	g.Expect(internalControllerURL("{name}-api.{namespace}.example:8443", cp)).To(Equal("http://iofog-api.edge.example:8443"))
	cp.Spec.Controller.HTTPS = ptr.To(true)
	g.Expect(internalControllerURL(DefaultControllerEndpointTemplate, cp)).To(Equal("https://controller.edge.svc.cluster.local:51121"))
}

func TestReferencedSecretNames(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth.Bootstrap.PasswordSecretRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "pw"}}
		cp.Spec.Controller.SecretName = "tls"
	})
	g.Expect(referencedSecretNames(cp)).To(ContainElements("pw", "tls", "router-site-ca", "default-router-local-ca"))
	g.Expect(referencedSecretNames(&corev1.Secret{})).To(BeNil())
}
