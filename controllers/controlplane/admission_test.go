package controlplane_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// The API server rejects what the renderer cannot build: a console port equal to the API port
// (two container ports of one key, which server-side apply refuses on every pass) and JetStream
// sizes server.conf cannot carry. A size it can carry is admitted.
func TestAdmissionMatchesTheRenderer(t *testing.T) {
	h := newHarness(t)
	g := h.g
	rejected := map[string]func(*datasancev3.ControlPlane){
		"consolePort 51121": func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.ConsolePort = 51121 },
		"storageSize 1.5Gi": func(cp *datasancev3.ControlPlane) {
			cp.Spec.Nats = &datasancev3.Nats{JetStream: &datasancev3.JetStream{StorageSize: "1.5Gi"}}
		},
		"memoryStoreSize 10m": func(cp *datasancev3.ControlPlane) {
			cp.Spec.Nats = &datasancev3.Nats{JetStream: &datasancev3.JetStream{MemoryStoreSize: "10m"}}
		},
		"wildcard ingress host without publicUrl": wildcardIngress,
	}
	for name, mod := range rejected {
		err := env.Client.Create(h.ctx, h.controlPlane(mod))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
	}
	h.create(h.controlPlane(wildcardIngress, func(cp *datasancev3.ControlPlane) {
		cp.Spec.Controller.PublicURL = "https://controller.example.com"
		cp.Spec.Controller.ConsolePort = 8080
		cp.Spec.Nats = &datasancev3.Nats{JetStream: &datasancev3.JetStream{StorageSize: "10Pi", MemoryStoreSize: "512Mi"}}
	}))
}

// wildcardIngress exposes the Controller through an Ingress for *.example.com.
func wildcardIngress(cp *datasancev3.ControlPlane) {
	cp.Spec.Services.Controller = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
	cp.Spec.Ingresses.Controller = &datasancev3.ControllerIngress{Host: "*.example.com"}
}
