package olminstall

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/test/olm/olmtest"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// writeServedCatalog writes the catalog OLM is given: the committed catalog with every bundle's
// `image` emptied, so that OLM installs each bundle from its olm.bundle.object properties and
// never starts an unpack Job. It then checks that the written catalog equals the committed one
// apart from `image`, and that every bundle does carry its objects.
func writeServedCatalog(t *testing.T, committedDir, servedDir string) {
	t.Helper()
	g := NewWithT(t)
	committed := olmtest.ReadCatalog(t, committedDir)
	g.Expect(committed).NotTo(BeEmpty(), "no catalog in %s: run `make catalog`", committedDir)
	for rel, objs := range committed {
		var buf bytes.Buffer
		for _, obj := range objs {
			if obj["schema"] == "olm.bundle" {
				obj = shallowCopy(obj)
				obj["image"] = ""
			}
			data, err := json.Marshal(obj)
			g.Expect(err).NotTo(HaveOccurred())
			buf.Write(data)
			buf.WriteByte('\n')
		}
		writeFile(t, filepath.Join(servedDir, rel+".json"), buf.Bytes())
	}

	served := olmtest.ReadCatalog(t, servedDir)
	g.Expect(served).To(HaveLen(len(committed)))
	bundles := 0
	for rel, objs := range committed {
		got := served[rel+".json"]
		g.Expect(got).To(HaveLen(len(objs)), rel)
		for i, want := range objs {
			if want["schema"] == "olm.bundle" {
				bundles++
				g.Expect(want["image"]).NotTo(BeEmpty(), "%s: the committed bundle %v has no image", rel, want["name"])
				g.Expect(got[i]["image"]).To(BeEmpty())
				g.Expect(bundleObjects(t, got[i])).To(ContainElement("ClusterServiceVersion"),
					"%s: bundle %v carries no olm.bundle.object CSV: OLM would unpack its image with a Job", rel, want["name"])
				want = shallowCopy(want)
				delete(want, "image")
				got[i] = shallowCopy(got[i])
				delete(got[i], "image")
			}
			g.Expect(got[i]).To(Equal(want), "%s #%d differs from the committed catalog beyond `image`", rel, i)
		}
	}
	g.Expect(bundles).To(BeNumerically(">=", 2), "the catalog must hold the released and the current version")
}

// bundleObjects returns the kinds of a bundle's olm.bundle.object properties.
func bundleObjects(t *testing.T, bundle map[string]any) []string {
	t.Helper()
	props, _ := bundle["properties"].([]any)
	var kinds []string
	for _, p := range props {
		m, _ := p.(map[string]any)
		if m["type"] != "olm.bundle.object" {
			continue
		}
		v, _ := m["value"].(map[string]any)
		s, _ := v["data"].(string)
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("bundle %v: olm.bundle.object is not base64: %v", bundle["name"], err)
		}
		var obj struct{ Kind string }
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("bundle %v: olm.bundle.object is not JSON: %v", bundle["name"], err)
		}
		kinds = append(kinds, obj.Kind)
	}
	return kinds
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// The served catalog is the committed one apart from `image` (also checked by every cluster
// start; this test says so on its own, without OLM).
func TestServedCatalogIsTheCommittedCatalogWithoutImages(t *testing.T) {
	writeServedCatalog(t, filepath.Join(testenv.Root(), "catalog"), filepath.Join(t.TempDir(), "catalog"))
}
