package olm

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/test/olm/olmtest"
)

// releasedBundles returns the frozen released bundles of hack/bundles, lowest version first.
func releasedBundles(t *testing.T) []*apimanifests.Bundle {
	t.Helper()
	entries, err := os.ReadDir(repoPath("hack", "bundles"))
	if err != nil {
		t.Fatal(err)
	}
	var out []*apimanifests.Bundle
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "v") {
			continue
		}
		b, err := apimanifests.GetBundleFromDir(repoPath("hack", "bundles", e.Name()))
		if err != nil {
			t.Fatalf("hack/bundles/%s: %v", e.Name(), err)
		}
		if got := "v" + b.CSV.Spec.Version.String(); got != e.Name() {
			t.Fatalf("hack/bundles/%s holds version %s", e.Name(), got)
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b *apimanifests.Bundle) int { return a.CSV.Spec.Version.Compare(b.CSV.Spec.Version.Version) })
	return out
}

// The catalog holds every released version and bundle/ (the current one), and upgrades run
// released -> current: bundle/'s CSV replaces the highest release, every channel's entry for it
// replaces that release and skips everything older, and every channel's only head is bundle/.
// At a release commit bundle/'s version is frozen already (make release): that frozen copy must
// be bundle/ exactly, and the releases before it are the ones checked.
func TestCatalogHoldsReleasedVersionsAndUpgradesToTheCurrentOne(t *testing.T) {
	g := NewWithT(t)
	current := loadBundle(t).CSV
	var released []*apimanifests.Bundle
	for _, b := range releasedBundles(t) {
		if b.CSV.Spec.Version.Equals(current.Spec.Version.Version) {
			frozen := repoPath("hack", "bundles", "v"+current.Spec.Version.String())
			out, err := exec.CommandContext(t.Context(), "diff", "-r", repoPath("bundle"), frozen).CombinedOutput()
			g.Expect(err).NotTo(HaveOccurred(), "%s is frozen but differs from bundle/: a released bundle never changes\n%s", frozen, out)
			continue
		}
		released = append(released, b)
	}
	g.Expect(released).NotTo(BeEmpty(), "no released bundle is frozen in hack/bundles")
	previous := released[len(released)-1].CSV
	g.Expect(previous.Spec.Version.LT(current.Spec.Version.Version)).To(BeTrue(),
		"bundle/ (%s) is not newer than the last release (%s): bump VERSION", current.Spec.Version, previous.Spec.Version)
	g.Expect(current.Spec.Replaces).To(Equal(previous.Name))
	g.Expect(current.Annotations).To(HaveKeyWithValue("olm.skipRange", "<"+current.Spec.Version.String()))

	catalog := olmtest.ReadCatalog(t, repoPath("catalog", controllers.Name))
	var bundles []string
	images := map[string]string{}
	for _, objs := range catalog {
		for _, o := range objs {
			if o["schema"] == "olm.bundle" {
				name, _ := o["name"].(string)
				bundles = append(bundles, name)
				images[name], _ = o["image"].(string)
			}
		}
	}
	want := []string{current.Name}
	for _, b := range released {
		want = append(want, b.CSV.Name)
	}
	g.Expect(bundles).To(ConsistOf(want), "run `make bundle catalog`")
	base := makefileVars(t)["IMAGE_TAG_BASE"]
	for _, b := range released {
		g.Expect(images[b.CSV.Name]).To(Equal(base + "-bundle:v" + b.CSV.Spec.Version.String()))
	}

	channels := 0
	for _, objs := range catalog {
		for _, o := range objs {
			if o["schema"] != "olm.channel" {
				continue
			}
			channels++
			entries, _ := o["entries"].([]any)
			replaced := map[string]bool{}
			var head map[string]any
			for _, e := range entries {
				m, _ := e.(map[string]any)
				if r, _ := m["replaces"].(string); r != "" {
					replaced[r] = true
				}
				if m["name"] == current.Name {
					head = m
				}
			}
			g.Expect(head).NotTo(BeNil(), "channel %v does not hold %s", o["name"], current.Name)
			g.Expect(head).To(HaveKeyWithValue("replaces", previous.Name), "channel %v", o["name"])
			g.Expect(head).To(HaveKeyWithValue("skipRange", "<"+current.Spec.Version.String()), "channel %v", o["name"])
			for _, e := range entries {
				m, _ := e.(map[string]any)
				if m["name"] != current.Name {
					g.Expect(replaced[m["name"].(string)]).To(BeTrue(), "channel %v: %v is a second head", o["name"], m["name"])
				}
			}
		}
	}
	g.Expect(channels).To(BeNumerically(">", 0))
}

// config/olm/catalogsource.yaml (the README's install, applied by test/olminstall) names the
// catalog image of this version.
func TestCatalogSourceNamesThisVersionsCatalogImage(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(repoPath("config", "olm", "catalogsource.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	cs := &operatorsv1alpha1.CatalogSource{}
	g.Expect(yaml.UnmarshalStrict(data, cs)).To(Succeed())
	vars := makefileVars(t)
	g.Expect(cs.Spec.Image).To(Equal(vars["IMAGE_TAG_BASE"] + "-catalog:v" + vars["VERSION"]))
	g.Expect(cs.Spec.SourceType).To(Equal(operatorsv1alpha1.SourceTypeGrpc))
}
