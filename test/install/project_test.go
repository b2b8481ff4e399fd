package install

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
		if r.API == nil {
			// A kind of another project that the operator reads (api/external): PROJECT lists it
			// without an API, so no tool generates or ships a CRD of it.
			g.Expect(r.Path).To(HavePrefix(p.Repo+"/"+externalAPIs+"/"), "%s has no api: only kinds of other projects live without one", r.Kind)
			g.Expect(crd).To(BeNil(), "PROJECT lists %s %s as another project's kind, config/crd/bases has a CRD of it", group, r.Kind)
		} else {
			g.Expect(crd).NotTo(BeNil(), "PROJECT lists %s %s, config/crd/bases has no CRD of it", group, r.Kind)
			delete(crds, group+"/"+r.Kind)
			g.Expect(crd.version).To(Equal(r.Version), r.Kind)
			g.Expect(r.API.CRDVersion).To(Equal("v1"))
			g.Expect(r.API.Namespaced).To(Equal(crd.scope == "Namespaced"), r.Kind)
		}

		g.Expect(r.Path).To(HavePrefix(p.Repo + "/"))
		dir := repoPath(strings.TrimPrefix(r.Path, p.Repo+"/"))
		g.Expect(filepath.Base(dir)).To(Equal(r.Version), "%s: the package is named after the version", r.Kind)
		g.Expect(goDeclares(t, dir, "type "+r.Kind+" struct")).To(BeTrue(), "%s declares no type %s", r.Path, r.Kind)
		g.Expect(controllers[r.Kind]).To(Equal(r.Controller), "%s: controller: %v, but a reconciler for it is %v", r.Kind, r.Controller, controllers[r.Kind])
	}
	g.Expect(crds).To(BeEmpty(), "CRDs of config/crd/bases that PROJECT does not list")
}

// externalAPIs holds the Go types of kinds other projects own (the tenant-controller's Tenant):
// the operator reads them and ships no CRD of them.
const externalAPIs = "api/external"

// Every kind of api/ (a type marked +kubebuilder:object:root=true, its List aside) is a resource
// of PROJECT with the group of its package's +groupName marker, the version its package is named
// after and the package as path; and PROJECT lists nothing else. A kind added under api/ without
// PROJECT, or PROJECT left behind by a moved or removed one, fails here.
func TestPROJECTListsEveryAPIKind(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(repoPath("PROJECT"))
	g.Expect(err).NotTo(HaveOccurred())
	var p project
	g.Expect(yaml.UnmarshalStrict(b, &p)).To(Succeed())
	listed := map[string]string{}
	for _, r := range p.Resources {
		listed[r.Kind] = r.Group + "." + r.Domain + "/" + r.Version + " " + r.Path
	}

	kinds := apiKinds(t)
	g.Expect(kinds).To(HaveKey("Tenant"), "the scan of api/ found too little: %v", kinds)
	g.Expect(listed).To(Equal(kinds), "PROJECT's resources (kind: group/version path) against the kinds of api/")
}

var (
	rootMarker  = regexp.MustCompile(`(?m)^\s*//\s*\+kubebuilder:object:root=true\s*$`)
	groupMarker = regexp.MustCompile(`(?m)^//\s*\+groupName=(\S+)\s*$`)
)

// apiKinds scans the packages under api/ and returns, for each kind, "group/version path" as
// PROJECT would list it.
func apiKinds(t *testing.T) map[string]string {
	t.Helper()
	gomod, err := os.ReadFile(repoPath("go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindSubmatch(gomod)[1]
	kinds := map[string]string{}
	err = filepath.WalkDir(repoPath("api"), func(dir string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			return err
		}
		group := ""
		var roots []string
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			if file.Doc != nil {
				if m := groupMarker.FindStringSubmatch(commentText(file.Doc)); m != nil {
					group = m[1]
				}
			}
			for _, decl := range file.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					doc := ts.Doc
					if doc == nil && len(gd.Specs) == 1 {
						doc = gd.Doc
					}
					if doc != nil && rootMarker.MatchString(commentText(doc)) {
						roots = append(roots, ts.Name.Name)
					}
				}
			}
		}
		if len(roots) == 0 {
			return nil
		}
		if group == "" {
			t.Errorf("%s has root types %v but no +groupName marker", dir, roots)
		}
		rel, err := filepath.Rel(repoPath(), dir)
		if err != nil {
			return err
		}
		for _, kind := range roots {
			if strings.HasSuffix(kind, "List") && slices.Contains(roots, strings.TrimSuffix(kind, "List")) {
				continue
			}
			kinds[kind] = group + "/" + filepath.Base(dir) + " " + string(module) + "/" + filepath.ToSlash(rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// commentText is a comment group's raw text, markers included (ast.CommentGroup.Text drops
// directive-like lines).
func commentText(c *ast.CommentGroup) string {
	var b strings.Builder
	for _, l := range c.List {
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
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
