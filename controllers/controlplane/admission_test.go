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

// The API server rejects pod settings no pod could run with: a request above its limit, a
// priority class or node selector key that is no Kubernetes name. Complete settings are admitted.
func TestAdmissionRefusesUnrunnablePodSettings(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	rejected := map[string]testfixture.Mod{
		"cpu request above limit": testfixture.WithPods(datasancev3.Pods{Router: &datasancev3.PodSettings{
			Resources: &datasancev3.Resources{Requests: testfixture.ResourceList("cpu", "2"), Limits: testfixture.ResourceList("cpu", "1")}}}),
		"memory request above limit (1Gi > 1G)": testfixture.WithPods(datasancev3.Pods{Controller: &datasancev3.PodSettings{
			Resources: &datasancev3.Resources{Requests: testfixture.ResourceList("memory", "1Gi"), Limits: testfixture.ResourceList("memory", "1G")}}}),
		"priority class not a name": testfixture.WithPods(datasancev3.Pods{Nats: &datasancev3.PodSettings{PriorityClassName: "High_Priority"}}),
		"node selector key not a name": testfixture.WithPods(datasancev3.Pods{Router: &datasancev3.PodSettings{
			NodeSelector: map[string]string{"zone a": "x"}}}),
	}
	for name, mod := range rejected {
		err := env.Client.Create(h.ctx, h.controlPlane(mod))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
	}
	h.create(h.controlPlane(testfixture.WithPods(testfixture.CompletePods()), testfixture.WithJetStream(datasancev3.JetStream{MemoryStoreSize: "256Mi"})))
}
