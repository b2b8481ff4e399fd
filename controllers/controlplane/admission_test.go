package controlplane_test

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The API server rejects what the renderer cannot build: a console port equal to the API port
// (two container ports of one key, which server-side apply refuses on every pass) and JetStream
// sizes server.conf cannot carry. A size it can carry is admitted.
func TestAdmissionMatchesTheRenderer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	wildcardIngress := testfixture.WithControllerIngress(datasancev3.ControllerIngress{Host: "*.example.com"})
	rejected := map[string]testfixture.Mod{
		"consolePort 51121":                       func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.ConsolePort = 51121 },
		"storageSize 1.5Gi":                       testfixture.WithJetStream(datasancev3.JetStream{StorageSize: "1.5Gi"}),
		"memoryStoreSize 10m":                     testfixture.WithJetStream(datasancev3.JetStream{MemoryStoreSize: "10m"}),
		"wildcard ingress host without publicUrl": wildcardIngress,
	}
	for name, mod := range rejected {
		err := env.Client.Create(h.ctx, h.controlPlane(mod))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
	}
	h.create(h.controlPlane(wildcardIngress, testfixture.WithPublicURL("https://controller.example.com"),
		testfixture.WithJetStream(datasancev3.JetStream{StorageSize: "10Pi", MemoryStoreSize: "512Mi"}),
		func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.ConsolePort = 8080 }))
}
