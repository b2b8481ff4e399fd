package controlplane

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// The default operand images are the 3.9.0 release line, and the manager Deployment's
// RELATED_IMAGE_* variables (what OLM's relatedImages are generated from) carry the same values,
// so an install through OLM and one through the Go defaults run the same operands.
func TestDefaultImagesMatchManagerManifest(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DefaultOptions().Images).To(Equal(resources.Images{
		Controller: "ghcr.io/datasance/controller:3.9.0",
		Router:     "ghcr.io/datasance/router:3.9.0",
		Nats:       "ghcr.io/datasance/nats:2.15.0",
	}))

	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", "manager.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	env := map[string]string{}
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var d appsv1.Deployment
		g.Expect(yaml.Unmarshal(doc, &d)).To(Succeed())
		if d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
		}
	}
	g.Expect(env).To(HaveKeyWithValue("RELATED_IMAGE_CONTROLLER", resources.DefaultControllerImage))
	g.Expect(env).To(HaveKeyWithValue("RELATED_IMAGE_ROUTER", resources.DefaultRouterImage))
	g.Expect(env).To(HaveKeyWithValue("RELATED_IMAGE_NATS", resources.DefaultNatsImage))
}
