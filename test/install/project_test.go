package install

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// project is the part of kubebuilder's PROJECT file (config version 3) the tools read.
type project struct {
	Domain      string         `json:"domain"`
	Layout      []string       `json:"layout"`
	MultiGroup  bool           `json:"multigroup"`
	Plugins     map[string]any `json:"plugins"`
	ProjectName string         `json:"projectName"`
	Repo        string         `json:"repo"`
	Version     string         `json:"version"`
	Resources   []struct {
		API *struct {
			CRDVersion string `json:"crdVersion"`
			Namespaced bool   `json:"namespaced"`
		} `json:"api"`
		Controller bool   `json:"controller"`
		Domain     string `json:"domain"`
		Group      string `json:"group"`
		Kind       string `json:"kind"`
		Path       string `json:"path"`
		Version    string `json:"version"`
	} `json:"resources"`
}

// PROJECT says what the repository is: its module, package name, layout and plugins, and for
// each API its CRD (group, version, kind, scope), its Go package and whether a reconciler serves
// it; and every CRD the repository ships is one of its APIs.
func TestPROJECTDescribesTheRepository(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(repoPath("PROJECT"))
	g.Expect(err).NotTo(HaveOccurred())
	var p project
	g.Expect(yaml.UnmarshalStrict(b, &p)).To(Succeed(), "PROJECT has fields the tools do not know")

	gomod, err := os.ReadFile(repoPath("go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(gomod)
	g.Expect(p.Repo).To(Equal(string(module[1])))
	g.Expect(p.ProjectName).To(Equal(makefileVars(t)["PACKAGE"]))
	g.Expect(p.Version).To(Equal("3"))
	g.Expect(p.Layout).To(Equal([]string{"go.kubebuilder.io/v4"}))
	g.Expect(p.Plugins).To(HaveKey("manifests.sdk.operatorframework.io/v2"))
	g.Expect(p.Plugins).To(HaveKey("scorecard.sdk.operatorframework.io/v2"))
	for _, dir := range []string{"config/default", "config/manager", "config/rbac", "config/crd", "config/samples", "config/manifests", "config/scorecard", "Dockerfile", "dist/chart"} {
		_, err := os.Stat(repoPath(dir))
		g.Expect(err).NotTo(HaveOccurred(), "the layout's %s", dir)
	}

	crds := map[string]*struct{ group, version, kind, scope string }{}
	for _, crd := range readCRDs(t) {
		crds[crd.group+"/"+crd.kind] = crd
	}
	controllers := reconciledKinds(t)
	g.Expect(p.MultiGroup).To(Equal(len(p.Resources) > 1))
	for _, r := range p.Resources {
		group := r.Group + "." + r.Domain
		crd := crds[group+"/"+r.Kind]
		g.Expect(crd).NotTo(BeNil(), "PROJECT lists %s %s, config/crd/bases has no CRD of it", group, r.Kind)
		delete(crds, group+"/"+r.Kind)
		g.Expect(crd.version).To(Equal(r.Version), r.Kind)
		g.Expect(r.API).NotTo(BeNil(), r.Kind)
		g.Expect(r.API.CRDVersion).To(Equal("v1"))
		g.Expect(r.API.Namespaced).To(Equal(crd.scope == "Namespaced"), r.Kind)

		g.Expect(r.Path).To(HavePrefix(p.Repo + "/"))
		dir := repoPath(strings.TrimPrefix(r.Path, p.Repo+"/"))
		g.Expect(filepath.Base(dir)).To(Equal(r.Version), "%s: the package is named after the version", r.Kind)
		g.Expect(goDeclares(t, dir, "type "+r.Kind+" struct")).To(BeTrue(), "%s declares no type %s", r.Path, r.Kind)
		g.Expect(controllers[r.Kind]).To(Equal(r.Controller), "%s: controller: %v, but a reconciler for it is %v", r.Kind, r.Controller, controllers[r.Kind])
	}
	g.Expect(crds).To(BeEmpty(), "CRDs of config/crd/bases that PROJECT does not list")
}

// readCRDs returns the group, storage version, kind and scope of each CRD of config/crd/bases.
func readCRDs(t *testing.T) []*struct{ group, version, kind, scope string } {
	t.Helper()
	var out []*struct{ group, version, kind, scope string }
	files, err := filepath.Glob(repoPath("config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs (%v)", err)
	}
	for _, f := range files {
		var crd struct {
			Spec struct {
				Group    string                `json:"group"`
				Names    struct{ Kind string } `json:"names"`
				Scope    string                `json:"scope"`
				Versions []struct {
					Name    string `json:"name"`
					Storage bool   `json:"storage"`
				} `json:"versions"`
			} `json:"spec"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		c := &struct{ group, version, kind, scope string }{group: crd.Spec.Group, kind: crd.Spec.Names.Kind, scope: crd.Spec.Scope}
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				c.version = v.Name
			}
		}
		out = append(out, c)
	}
	return out
}

var forKind = regexp.MustCompile(`For\(&[a-z0-9]+\.([A-Za-z]+)\{\}`)

// reconciledKinds are the kinds a reconciler under controllers/ is built For.
func reconciledKinds(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(repoPath("controllers"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range forKind.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goDeclares reports whether a Go file of dir (not a test) contains decl.
func goDeclares(t *testing.T, dir, decl string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), decl) {
			return true
		}
	}
	return false
}
