package natsconf_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// One table for both sides: what the ControlPlane CRD admits for jetStream.storageSize and
// memoryStoreSize (the pattern in the generated CRD) is exactly what Render accepts, and every
// admitted value is a Kubernetes quantity (the PVC request).
func TestJetStreamSizesAdmittedEqualsRendered(t *testing.T) {
	sizes := map[string]bool{
		"10Gi": true, "1Gi": true, "512Mi": true, "1Ti": true, "10Pi": true, "1Ei": true, "64Ki": true,
		"10G": true, "1M": true, "100k": true, "5T": true, "1P": true, "1E": true, "1073741824": true,
		"1.5Gi": false, "10m": false, "10K": false, "10g": false, "10gi": false, "1e9": false, "": false,
		"-1Gi": false, " 10Gi": false, "10 Gi": false, "Gi": false, "10Gi\n": false,
	}
	g := NewWithT(t)
	for _, field := range []string{"storageSize", "memoryStoreSize"} {
		pattern := crdPattern(t, field)
		g.Expect(pattern).To(Equal(natsconf.SizePattern), "the CRD's %s pattern is natsconf.SizePattern", field)
		admit := regexp.MustCompile(pattern)
		for size, ok := range sizes {
			g.Expect(admit.MatchString(size)).To(Equal(ok), "CRD %s %q", field, size)
			if size == "" {
				continue // omitted: the default
			}
			p := params()
			if field == "storageSize" {
				p.FileStore = size
			} else {
				p.MemoryStore = size
			}
			_, err := natsconf.Render(p, "")
			g.Expect(err == nil).To(Equal(ok), "Render %s %q: %v", field, size, err)
			if ok {
				_, err := resource.ParseQuantity(size)
				g.Expect(err).NotTo(HaveOccurred(), "quantity %q", size)
			}
		}
	}
}

// crdPattern returns the pattern of spec.nats.jetStream.<field> in the generated CRD.
func crdPattern(t *testing.T, field string) string {
	t.Helper()
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "datasance.com_controlplanes.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.Unmarshal(raw, &crd)).To(Succeed())
	var pattern string
	for _, v := range crd.Spec.Versions {
		if v.Name != "v3" {
			continue
		}
		js := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["nats"].Properties["jetStream"]
		pattern = js.Properties[field].Pattern
	}
	g.Expect(strings.TrimSpace(pattern)).NotTo(BeEmpty())
	return pattern
}
