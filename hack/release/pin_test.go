package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// The committed digest file is well formed for the manager's operand images.
func TestOperandDigestsFileIsWellFormed(t *testing.T) {
	g := NewWithT(t)
	related, err := managerRelatedImages(testenv.Root())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(related).To(HaveKey("controller"))
	entries, err := readOperandDigests(filepath.Join(testenv.Root(), "hack", "operand-digests.yaml"), related)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(len(related)))
}

func TestOperandDigestsFileRefusesBadEntries(t *testing.T) {
	related := map[string]string{"controller": "ghcr.io/datasance/controller:3.9.0", "nats": "ghcr.io/datasance/nats:2.15.0"}
	good := "sha256:" + strings.Repeat("a1", 32)
	cases := []struct{ name, file, want string }{
		{"a digest that is not sha256", "images:\n- {name: controller, image: ghcr.io/datasance/controller:3.9.0, digest: 'sha256:abc'}\n- {name: nats, image: ghcr.io/datasance/nats:2.15.0, digest: ''}\n", "not sha256"},
		{"a digest in upper case", "images:\n- {name: controller, image: ghcr.io/datasance/controller:3.9.0, digest: 'sha256:" + strings.Repeat("A1", 32) + "'}\n- {name: nats, image: ghcr.io/datasance/nats:2.15.0, digest: ''}\n", "not sha256"},
		{"another image than the manager's", "images:\n- {name: controller, image: ghcr.io/datasance/controller:3.8.0, digest: '" + good + "'}\n- {name: nats, image: ghcr.io/datasance/nats:2.15.0, digest: ''}\n", "the manager's default"},
		{"an unknown name", "images:\n- {name: controller, image: ghcr.io/datasance/controller:3.9.0, digest: ''}\n- {name: nats, image: ghcr.io/datasance/nats:2.15.0, digest: ''}\n- {name: proxy, image: x:1, digest: ''}\n", "no RELATED_IMAGE_"},
		{"a missing entry", "images:\n- {name: controller, image: ghcr.io/datasance/controller:3.9.0, digest: ''}\n", "no entry for RELATED_IMAGE_NATS"},
		{"an entry twice", "images:\n- {name: controller, image: ghcr.io/datasance/controller:3.9.0, digest: ''}\n- {name: controller, image: ghcr.io/datasance/controller:3.9.0, digest: ''}\n- {name: nats, image: ghcr.io/datasance/nats:2.15.0, digest: ''}\n", "listed twice"},
		{"a misspelt key", "images:\n- {name: controller, image: ghcr.io/datasance/controller:3.9.0, digets: ''}\n- {name: nats, image: ghcr.io/datasance/nats:2.15.0, digest: ''}\n", "digets"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			path := filepath.Join(t.TempDir(), "digests.yaml")
			g.Expect(os.WriteFile(path, []byte(tc.file), 0o600)).To(Succeed())
			_, err := readOperandDigests(path, related)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestReplaceRefMatchesWholeReferences(t *testing.T) {
	g := NewWithT(t)
	text := "a: ghcr.io/x/y:1.0\nb: 'ghcr.io/x/y:1.0'\nc: ghcr.io/x/y:1.0.1\nd: ghcr.io/x/y:1.0-rc\ne: my.ghcr.io/x/y:1.0\n"
	out, n := replaceRef(text, "ghcr.io/x/y:1.0", "ghcr.io/x/y@sha256:00")
	g.Expect(n).To(Equal(2))
	g.Expect(out).To(Equal("a: ghcr.io/x/y@sha256:00\nb: 'ghcr.io/x/y@sha256:00'\nc: ghcr.io/x/y:1.0.1\nd: ghcr.io/x/y:1.0-rc\ne: my.ghcr.io/x/y:1.0\n"))
	g.Expect(pinnedRef("localhost:5000/x/y:v1", "sha256:00")).To(Equal("localhost:5000/x/y@sha256:00"))
	g.Expect(pinnedRef("localhost:5000/x/y", "sha256:00")).To(Equal("localhost:5000/x/y@sha256:00"))
}

// releaseTree copies what pinRelease reads from the repository into a temporary tree and turns
// the changelog's Unreleased section into version's, as make release does before pinning.
func releaseTree(t *testing.T, version string) string {
	t.Helper()
	g := NewWithT(t)
	root := testenv.Root()
	tree := t.TempDir()
	for _, dir := range []string{"bundle", "catalog", "dist"} {
		g.Expect(os.CopyFS(filepath.Join(tree, dir), os.DirFS(filepath.Join(root, dir)))).To(Succeed())
	}
	g.Expect(os.MkdirAll(filepath.Join(tree, "config", "manager"), 0o755)).To(Succeed())
	b, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(tree, "config", "manager", "manager.yaml"), b, 0o600)).To(Succeed())
	b, err = os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	g.Expect(err).NotTo(HaveOccurred())
	released, err := releaseChangelog(string(b), version, "2026-12-07", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(tree, "CHANGELOG.md"), []byte(released), 0o600)).To(Succeed())
	return tree
}

// makefileVersion is the Makefile's VERSION.
func makefileVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no VERSION in the Makefile")
	}
	return string(m[1])
}

// The release's published manifests (the CSV, the catalog's entry, install.yaml and the chart)
// name the operator image by the index digest and the operand images as the digest file says,
// and all agree; a manifest that disagrees fails the check.
func TestPinnedReleaseManifestsAgree(t *testing.T) {
	g := NewWithT(t)
	version := makefileVersion(t)
	tree := releaseTree(t, version)
	image := "ghcr.io/kubeopera/kubeopera-operator:v" + version
	digest := "sha256:" + strings.Repeat("0f", 32)
	controllerDigest := "sha256:" + strings.Repeat("c0", 32)
	// The Controller's digest is known, the Router's and NATS's are not.
	operands := filepath.Join(t.TempDir(), "digests.yaml")
	g.Expect(os.WriteFile(operands, []byte(`images:
- {name: controller, image: "ghcr.io/datasance/controller:3.9.0", digest: "`+controllerDigest+`"}
- {name: router, image: "ghcr.io/datasance/router:3.9.0", digest: ""}
- {name: nats, image: "ghcr.io/datasance/nats:2.15.0", digest: ""}
`), 0o600)).To(Succeed())
	out := filepath.Join(t.TempDir(), "release")

	p, err := pinRelease(tree, version, image, digest, operands, out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.unknownNames).To(ConsistOf("router", "nats"))
	g.Expect(verifyPins(out, version, p)).To(Succeed())

	operator := "ghcr.io/kubeopera/kubeopera-operator@" + digest
	controller := "ghcr.io/datasance/controller@" + controllerDigest
	deployment, related, containerImage, err := csvImages(filepath.Join(out, "bundle", "manifests", "kubeopera-operator.clusterserviceversion.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(containerImage).To(Equal(operator))
	g.Expect(deployment).To(Equal(imageSet{"kubeopera-operator": operator, "controller": controller,
		"router": "ghcr.io/datasance/router:3.9.0", "nats": "ghcr.io/datasance/nats:2.15.0"}))
	g.Expect(related).To(Equal(deployment))

	// Nothing published names the operator by tag any more; the committed tree is untouched.
	for _, f := range []string{"bundle/manifests/kubeopera-operator.clusterserviceversion.yaml", "install.yaml", "catalog/kubeopera-operator/bundle-v" + version + ".yaml"} {
		b, err := os.ReadFile(filepath.Join(out, f))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(b)).NotTo(ContainSubstring(image), f)
		g.Expect(string(b)).To(ContainSubstring(operator), f)
	}
	committed, err := os.ReadFile(filepath.Join(tree, "dist", "install.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(committed)).To(ContainSubstring(image))

	// The catalog carries the pinned CSV as an object, the earlier release as released.
	entry, err := os.ReadFile(filepath.Join(out, "catalog", "kubeopera-operator", "bundle-v"+version+".yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var csvObject string
	for _, m := range catalogData.FindAllStringSubmatch(string(entry), -1) {
		obj, err := base64.StdEncoding.DecodeString(m[2])
		g.Expect(err).NotTo(HaveOccurred())
		if strings.Contains(string(obj), `"kind":"ClusterServiceVersion"`) {
			csvObject = string(obj)
		}
	}
	g.Expect(csvObject).To(ContainSubstring(`"containerImage":"` + operator + `"`))
	g.Expect(csvObject).To(ContainSubstring(controller))
	g.Expect(csvObject).To(ContainSubstring(`"features.operators.openshift.io/disconnected":"false"`), "two operands are by tag")

	// The chart: image.digest by default, Artifact Hub's images and changes.
	ch, err := loader.Load(filepath.Join(out, "kubeopera-operator-"+version+".tgz"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Values["image"]).To(HaveKeyWithValue("digest", digest))
	g.Expect(ch.Values["operandImages"]).To(HaveKeyWithValue("controller", controller))
	g.Expect(ch.Metadata.Annotations["artifacthub.io/images"]).To(ContainSubstring(operator))
	g.Expect(ch.Metadata.Annotations["artifacthub.io/changes"]).To(ContainSubstring("kind: added"))

	// A manifest that disagrees is caught, naming it.
	b, err := os.ReadFile(filepath.Join(out, "install.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(out, "install.yaml"), []byte(strings.ReplaceAll(string(b), controller, "ghcr.io/datasance/controller:3.9.0")), 0o600)).To(Succeed())
	g.Expect(verifyPins(out, version, p)).To(MatchError(ContainSubstring("install.yaml's Deployment: controller")))
}

// With every digest known, the published CSV says it suits disconnected installs.
func TestPinnedReleaseWithEveryDigestIsDisconnected(t *testing.T) {
	g := NewWithT(t)
	version := makefileVersion(t)
	tree := releaseTree(t, version)
	operands := filepath.Join(t.TempDir(), "digests.yaml")
	g.Expect(os.WriteFile(operands, []byte(`images:
- {name: controller, image: "ghcr.io/datasance/controller:3.9.0", digest: "sha256:`+strings.Repeat("c0", 32)+`"}
- {name: router, image: "ghcr.io/datasance/router:3.9.0", digest: "sha256:`+strings.Repeat("d0", 32)+`"}
- {name: nats, image: "ghcr.io/datasance/nats:2.15.0", digest: "sha256:`+strings.Repeat("e0", 32)+`"}
`), 0o600)).To(Succeed())
	out := filepath.Join(t.TempDir(), "release")
	p, err := pinRelease(tree, version, "ghcr.io/kubeopera/kubeopera-operator:v"+version, "sha256:"+strings.Repeat("0f", 32), operands, out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(verifyPins(out, version, p)).To(Succeed())
	b, err := os.ReadFile(filepath.Join(out, "bundle", "manifests", "kubeopera-operator.clusterserviceversion.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(b)).To(ContainSubstring(`features.operators.openshift.io/disconnected: "true"`))
	g.Expect(string(b)).NotTo(MatchRegexp(`ghcr\.io/datasance/\w+:\d`), "no operand by tag")
}

func TestChangelogChangesForArtifactHub(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "CHANGELOG.md")
	g.Expect(os.WriteFile(path, []byte(`# Changelog

## [Unreleased]

## [1.2.0] - 2026-12-07

### Upgrade actions
- Rename crds.install to crds.enabled in your values.

### Added
- Pinned digests in every published
  manifest.

### Fixed
- A fix.

## [1.1.0] - 2026-11-01

### Added
- Older.
`), 0o600)).To(Succeed())
	changes, err := changelogChanges(path, "1.2.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes).To(Equal([]artifactHubChange{
		{Kind: "changed", Description: "Upgrade action: Rename crds.install to crds.enabled in your values."},
		{Kind: "added", Description: "Pinned digests in every published manifest."},
		{Kind: "fixed", Description: "A fix."},
	}))
	_, err = changelogChanges(path, "9.9.9")
	g.Expect(err).To(MatchError(ContainSubstring("no section ## [9.9.9]")))
}
