package olm

import (
	"encoding/base64"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/api/pkg/validation"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/olmcheck"
	"github.com/kubeopera/kubeopera-operator/internal/olmscope"
	"github.com/kubeopera/kubeopera-operator/test/olm/olmtest"
)

// The operator-framework/api validators `operator-sdk bundle validate --select-optional
// suite=operatorframework` runs (minus the multi-arch one, which needs a container engine), at the
// Kubernetes version of the client libraries: no errors and no warnings.
func TestBundlePassesOperatorFrameworkValidators(t *testing.T) {
	g := NewWithT(t)
	bundle := loadBundle(t)
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.ObjectValidator,
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.GoodPracticesValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	objs := append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": libraryKubeVersion(t)})
	var findings []string
	for _, r := range validators.Validate(objs...) {
		for _, e := range r.Errors {
			findings = append(findings, "error: "+e.Error())
		}
		for _, w := range r.Warnings {
			if olmcheck.IsPDBRuleFalsePositive("warning", w.Error()) {
				continue // operator-framework/api#378: RBAC rules carry no API version
			}
			findings = append(findings, "warning: "+w.Error())
		}
	}
	g.Expect(findings).To(BeEmpty())
}

// `make bundle-validate` validates at the Makefile's K8S_VERSION: it must be the libraries' version.
func TestMakefileKubernetesVersionIsTheLibraries(t *testing.T) {
	NewWithT(t).Expect(makefileVars(t)["K8S_VERSION"]).To(Equal(libraryKubeVersion(t)))
}

// OLM hands the operator its target namespaces in the olm.targetNamespaces annotation: "" for
// AllNamespaces, one namespace for OwnNamespace and SingleNamespace, a comma-separated list for
// MultiNamespace. The Deployment must pass it as WATCH_NAMESPACE, and the manager must accept each
// form, so every install mode can be claimed.
func TestInstallModesMatchWatchNamespaceHandling(t *testing.T) {
	g := NewWithT(t)
	csv := loadBundle(t).CSV

	supported := map[operatorsv1alpha1.InstallModeType]bool{}
	for _, m := range csv.Spec.InstallModes {
		supported[m.Type] = m.Supported
	}
	g.Expect(supported).To(Equal(map[operatorsv1alpha1.InstallModeType]bool{
		operatorsv1alpha1.InstallModeTypeOwnNamespace:    true,
		operatorsv1alpha1.InstallModeTypeSingleNamespace: true,
		operatorsv1alpha1.InstallModeTypeMultiNamespace:  true,
		operatorsv1alpha1.InstallModeTypeAllNamespaces:   true,
	}))

	_, c := olmtest.InstallDeployment(t, csv)
	var watch []string
	for _, e := range c.Env {
		if e.Name == "WATCH_NAMESPACE" {
			g.Expect(e.Value).To(BeEmpty())
			g.Expect(e.ValueFrom).NotTo(BeNil())
			g.Expect(e.ValueFrom.FieldRef).NotTo(BeNil())
			watch = append(watch, e.ValueFrom.FieldRef.FieldPath)
		}
	}
	g.Expect(watch).To(Equal([]string{"metadata.annotations['olm.targetNamespaces']"}))

	for _, tc := range []struct {
		mode    operatorsv1alpha1.InstallModeType
		targets string
		want    []string
	}{
		{operatorsv1alpha1.InstallModeTypeAllNamespaces, "", nil},
		{operatorsv1alpha1.InstallModeTypeOwnNamespace, "kubeopera-operator-system", []string{"kubeopera-operator-system"}},
		{operatorsv1alpha1.InstallModeTypeSingleNamespace, "team-a", []string{"team-a"}},
		{operatorsv1alpha1.InstallModeTypeMultiNamespace, "team-b,team-a", []string{"team-a", "team-b"}},
	} {
		got, err := controllers.ParseWatchNamespaces(tc.targets)
		g.Expect(err).NotTo(HaveOccurred(), "%s", tc.mode)
		g.Expect(got).To(Equal(tc.want), "%s", tc.mode)
	}
}

// The bundle ships exactly the operator's CRDs (never the tenant-controller's Tenant), each with
// at least one alm-example, and every example is of an owned kind.
func TestOwnedCRDsAndALMExamples(t *testing.T) {
	g := NewWithT(t)
	bundle := loadBundle(t)

	var shipped []string
	for _, crd := range bundle.V1CRDs {
		shipped = append(shipped, crd.Name)
	}
	g.Expect(bundle.V1beta1CRDs).To(BeEmpty())
	sort.Strings(shipped)
	g.Expect(shipped).To(Equal(crdNamesIn(t, repoPath("config", "crd", "bases"))), "run `make bundle catalog`")
	g.Expect(shipped).NotTo(ContainElements(crdNamesIn(t, repoPath("test", "crds"))))

	owned := map[string]bool{}
	for _, d := range bundle.CSV.Spec.CustomResourceDefinitions.Owned {
		owned[d.Kind] = false
		g.Expect(shipped).To(ContainElement(d.Name))
	}
	g.Expect(owned).To(HaveLen(len(shipped)))
	for _, ex := range olmtest.ALMExamples(t, bundle.CSV) {
		_, isOwned := owned[ex.GetKind()]
		g.Expect(isOwned).To(BeTrue(), "alm-example of kind %s is not an owned CRD", ex.GetKind())
		g.Expect(ex.Object).To(HaveKey("spec"))
		owned[ex.GetKind()] = true
	}
	for kind, hasExample := range owned {
		g.Expect(hasExample).To(BeTrue(), "owned kind %s has no alm-example", kind)
	}
}

func crdNamesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		data, err := os.ReadFile(dir + "/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatal(err)
		}
		names = append(names, crd.Name)
	}
	sort.Strings(names)
	return names
}

// relatedImages must list every image the operator can deploy: its own, and the default of every
// operand image, which the manager takes from RELATED_IMAGE_* variables (ImagesFromEnv). The
// defaults must also agree with the ones compiled into the operator.
func TestRelatedImagesListEveryImageTheOperatorDeploys(t *testing.T) {
	g := NewWithT(t)
	csv := loadBundle(t).CSV
	dep, c := olmtest.InstallDeployment(t, csv)

	related := map[string]string{}
	for _, r := range csv.Spec.RelatedImages {
		g.Expect(r.Name).NotTo(BeEmpty(), "related image %s has no name", r.Image)
		g.Expect(r.Image).NotTo(BeEmpty(), "related image %s has no image", r.Name)
		g.Expect(r.Image).NotTo(HaveSuffix(":latest"))
		related[r.Image] = r.Name
	}
	g.Expect(related).To(HaveLen(len(csv.Spec.RelatedImages)), "duplicate related images")

	// The operator's own image, also announced as containerImage.
	g.Expect(related).To(HaveKey(c.Image))
	g.Expect(csv.GetAnnotations()).To(HaveKeyWithValue("containerImage", c.Image))
	for _, other := range slices.Concat(dep.Spec.Template.Spec.InitContainers, dep.Spec.Template.Spec.Containers) {
		g.Expect(related).To(HaveKey(other.Image))
	}

	// Every operand image comes from a RELATED_IMAGE_* variable that is listed.
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "RELATED_IMAGE_") {
			g.Expect(e.ValueFrom).To(BeNil(), "%s must be a plain value", e.Name)
			g.Expect(related).To(HaveKey(e.Value), "%s=%s is not in relatedImages", e.Name, e.Value)
			t.Setenv(e.Name, e.Value)
		}
	}
	fromEnv := controllers.ImagesFromEnv(controlplane.Images{})
	v := reflect.ValueOf(fromEnv)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		g.Expect(v.Field(i).String()).NotTo(BeEmpty(), "operand image %s has no RELATED_IMAGE_* variable in the bundle", name)
	}
	g.Expect(fromEnv).To(Equal(controlplane.DefaultOptions().Images),
		"the bundle's RELATED_IMAGE_* values (config/manager/manager.yaml) differ from the operator's defaults")
}

// OperatorHub metadata the validators do not fully check.
func TestCSVMetadata(t *testing.T) {
	g := NewWithT(t)
	csv := loadBundle(t).CSV
	base := loadBaseCSV(t)
	ann := csv.GetAnnotations()

	g.Expect(csv.Spec.Icon).To(HaveLen(1))
	g.Expect(csv.Spec.Icon[0].MediaType).To(Equal("image/svg+xml"))
	icon, err := base64.StdEncoding.DecodeString(csv.Spec.Icon[0].Data)
	g.Expect(err).NotTo(HaveOccurred())
	svg, err := os.ReadFile(repoPath("config", "manifests", "icon.svg"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(icon)).To(Equal(string(svg)))

	g.Expect(csv.Spec.MinKubeVersion).NotTo(BeEmpty())
	g.Expect(csv.Spec.MinKubeVersion).To(Equal(base.Spec.MinKubeVersion))
	_, err = version.ParseSemantic(csv.Spec.MinKubeVersion)
	g.Expect(err).NotTo(HaveOccurred())

	bundleVersion := csv.Spec.Version.String()
	g.Expect(bundleVersion).To(Equal(makefileVars(t)["VERSION"]))
	g.Expect(csv.Name).To(Equal(controllers.Name + ".v" + bundleVersion))
	g.Expect(ann).To(HaveKeyWithValue("olm.skipRange", "<"+bundleVersion))
	g.Expect(ann).To(HaveKeyWithValue("createdAt", base.GetAnnotations()["createdAt"]))
	_, err = time.Parse(time.RFC3339, ann["createdAt"])
	g.Expect(err).NotTo(HaveOccurred())

	// Level 2 is claimed, as the base CSV's comment argues with its tests; level 3 (Full
	// Lifecycle) is not demonstrated, so no higher level can be.
	g.Expect(ann).To(HaveKeyWithValue("capabilities", "Seamless Upgrades"))
	g.Expect(ann["capabilities"]).To(Equal(base.GetAnnotations()["capabilities"]))
	for _, k := range []string{"categories", "description", "repository", "support"} {
		g.Expect(ann[k]).NotTo(BeEmpty(), "annotation %s", k)
	}
	g.Expect(len(ann["description"])).To(BeNumerically("<=", 135), "the tile description is cut after 135 characters")
	for _, f := range []string{"disconnected", "fips-compliant", "proxy-aware", "tls-profiles",
		"token-auth-aws", "token-auth-azure", "token-auth-gcp", "cnf", "cni", "csi"} {
		g.Expect(ann).To(HaveKeyWithValue("features.operators.openshift.io/"+f, BeElementOf("true", "false")))
	}
	g.Expect(csv.Spec.Description).To(ContainSubstring("## "), "the long description is markdown")
	g.Expect(csv.Spec.Maintainers).NotTo(BeEmpty())
	g.Expect(csv.Spec.Provider.Name).NotTo(BeEmpty())
	g.Expect(csv.Spec.Links).NotTo(BeEmpty())
	g.Expect(csv.Spec.Keywords).NotTo(BeEmpty())
	g.Expect(csv.Spec.Maturity).NotTo(BeEmpty())
}

// The operator container runs under the restricted Pod Security Standard with requests and limits.
func TestManagerContainerIsRestricted(t *testing.T) {
	g := NewWithT(t)
	dep, c := olmtest.InstallDeployment(t, loadBundle(t).CSV)

	pod := dep.Spec.Template.Spec.SecurityContext
	g.Expect(pod).NotTo(BeNil())
	g.Expect(pod.RunAsNonRoot).To(HaveValue(BeTrue()))
	sc := c.SecurityContext
	g.Expect(sc).NotTo(BeNil())
	g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(sc.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(sc.Privileged).To(Or(BeNil(), HaveValue(BeFalse())))
	g.Expect(sc.Capabilities).NotTo(BeNil())
	g.Expect(sc.Capabilities.Drop).To(ContainElement(BeEquivalentTo("ALL")))
	g.Expect(sc.Capabilities.Add).To(BeEmpty())
	g.Expect(sc.SeccompProfile).NotTo(BeNil())
	g.Expect(string(sc.SeccompProfile.Type)).To(Equal("RuntimeDefault"))

	for _, r := range []string{"cpu", "memory"} {
		g.Expect(c.Resources.Requests).To(HaveKey(BeEquivalentTo(r)))
		g.Expect(c.Resources.Limits).To(HaveKey(BeEquivalentTo(r)))
	}
	g.Expect(c.LivenessProbe).NotTo(BeNil())
	g.Expect(c.ReadinessProbe).NotTo(BeNil())
}

// RBAC: no wildcard anywhere; what the markers grant is all in the bundle; clusterPermissions
// hold only cluster-scoped resources and the Tenant reads; permissions nothing cluster-scoped.
func TestRBACIsSplitByScopeWithoutWildcards(t *testing.T) {
	g := NewWithT(t)
	spec := loadBundle(t).CSV.Spec.InstallStrategy.StrategySpec

	permissions := flattenRules(t, spec.Permissions)
	clusterPermissions := flattenRules(t, spec.ClusterPermissions)
	for _, grant := range slices.Concat(permissions, clusterPermissions) {
		g.Expect(grant).NotTo(ContainSubstring("*"), "wildcard grant")
	}

	// Everything config/rbac/role.yaml (the markers) grants is in the bundle.
	data, err := os.ReadFile(repoPath("config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.ClusterRole{}
	g.Expect(yaml.Unmarshal(data, role)).To(Succeed())
	fromMarkers := grants(role.Rules)
	g.Expect(slices.Concat(permissions, clusterPermissions)).To(ContainElements(fromMarkers),
		"the bundle lacks RBAC the markers grant: run `make bundle catalog`")

	// Scope of each grant's resource: the built-in table hack/olmtool splits by (internal/olmscope,
	// itself checked against a real API server); our CRDs are namespaced.
	clusterScoped := olmscope.Builtins()
	const tenants = "kubeopera.io/tenants"
	for _, grant := range permissions {
		gr := grantResource(grant)
		g.Expect(clusterScoped[gr]).To(BeFalse(), "cluster-scoped %s granted in permissions", gr)
		if gr == tenants {
			g.Expect(grant).To(Or(HaveSuffix(" get"), HaveSuffix(" list"), HaveSuffix(" watch")), "Tenants are only read")
		}
	}
	for _, grant := range clusterPermissions {
		gr := grantResource(grant)
		g.Expect(clusterScoped[gr]).To(BeTrue(), "namespaced %s granted in clusterPermissions", gr)
	}
	// Tenant reads are namespaced: in a Single/MultiNamespace install only the watched
	// namespaces' Tenants can be read (docs/olm.md, "Least privilege, proven").
	g.Expect(permissions).To(ContainElements(tenants+" get", tenants+" list", tenants+" watch"))
	// Leader election in the operator's own namespace.
	g.Expect(permissions).To(ContainElements("coordination.k8s.io/leases get", "coordination.k8s.io/leases update"))
}

// flattenRules turns the permissions of the operator's ServiceAccount into "group/resource verb"
// grants.
func flattenRules(t *testing.T, perms []operatorsv1alpha1.StrategyDeploymentPermissions) []string {
	t.Helper()
	var out []string
	for _, p := range perms {
		if p.ServiceAccountName != controllers.Name+"-controller-manager" {
			t.Fatalf("permissions for unexpected ServiceAccount %s", p.ServiceAccountName)
		}
		out = append(out, grants(p.Rules)...)
	}
	return out
}

func grants(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, u := range r.NonResourceURLs {
			for _, v := range r.Verbs {
				out = append(out, "url:"+u+" "+v)
			}
		}
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, grp := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					for _, n := range names {
						grant := grp + "/" + res + " " + v
						if n != "" {
							grant += " name=" + n
						}
						out = append(out, grant)
					}
				}
			}
		}
	}
	return out
}

// grantResource returns "group/resource" of a grant, subresources folded into their resource.
func grantResource(grant string) string {
	gr, _, _ := strings.Cut(grant, " ")
	group, res, _ := strings.Cut(gr, "/")
	res, _, _ = strings.Cut(res, "/")
	return group + "/" + res
}

// Every top-level field of each owned CRD's spec and status has a descriptor (the console's form
// and details page), and every descriptor points at a field that exists.
func TestDescriptorsCoverEveryTopLevelField(t *testing.T) {
	g := NewWithT(t)
	bundle := loadBundle(t)
	crds := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range bundle.V1CRDs {
		crds[crd.Name] = crd
	}
	for _, owned := range bundle.CSV.Spec.CustomResourceDefinitions.Owned {
		crd := crds[owned.Name]
		g.Expect(crd).NotTo(BeNil(), owned.Name)
		var root *apiextensionsv1.JSONSchemaProps
		for _, v := range crd.Spec.Versions {
			if v.Name == owned.Version {
				root = v.Schema.OpenAPIV3Schema
			}
		}
		g.Expect(root).NotTo(BeNil(), "%s has no schema for %s", owned.Name, owned.Version)
		g.Expect(owned.DisplayName).NotTo(BeEmpty())
		g.Expect(owned.Description).NotTo(BeEmpty())
		g.Expect(owned.Resources).NotTo(BeEmpty())

		var specPaths, statusPaths []string
		for _, d := range owned.SpecDescriptors {
			specPaths = append(specPaths, d.Path)
			g.Expect(d.DisplayName).NotTo(BeEmpty(), "%s spec.%s", owned.Kind, d.Path)
			g.Expect(d.Description).NotTo(BeEmpty(), "%s spec.%s", owned.Kind, d.Path)
			g.Expect(schemaHasPath(root.Properties["spec"], d.Path)).To(BeTrue(), "%s has no field spec.%s", owned.Kind, d.Path)
		}
		for _, d := range owned.StatusDescriptors {
			statusPaths = append(statusPaths, d.Path)
			g.Expect(d.DisplayName).NotTo(BeEmpty(), "%s status.%s", owned.Kind, d.Path)
			g.Expect(d.Description).NotTo(BeEmpty(), "%s status.%s", owned.Kind, d.Path)
			g.Expect(schemaHasPath(root.Properties["status"], d.Path)).To(BeTrue(), "%s has no field status.%s", owned.Kind, d.Path)
		}
		for field := range root.Properties["spec"].Properties {
			g.Expect(specPaths).To(ContainElement(field),
				"%s spec.%s has no spec descriptor: add one to config/manifests/bases, then `make bundle catalog`", owned.Kind, field)
		}
		for field := range root.Properties["status"].Properties {
			g.Expect(statusPaths).To(ContainElement(field),
				"%s status.%s has no status descriptor: add one to config/manifests/bases, then `make bundle catalog`", owned.Kind, field)
		}
	}
}

func schemaHasPath(s apiextensionsv1.JSONSchemaProps, path string) bool {
	for _, p := range strings.Split(path, ".") {
		child, ok := s.Properties[p]
		if !ok {
			return false
		}
		s = child
	}
	return true
}

// bundle/metadata/annotations.yaml carries the Makefile's package and channels.
func TestBundleMetadata(t *testing.T) {
	g := NewWithT(t)
	bundle := loadBundle(t)
	vars := makefileVars(t)
	g.Expect(bundle.Package).To(Equal(vars["PACKAGE"]))
	g.Expect(bundle.Package).To(Equal(controllers.Name))
	g.Expect(bundle.Channels).To(Equal(strings.Split(vars["CHANNELS"], ",")))
	g.Expect(bundle.DefaultChannel).To(Equal(vars["DEFAULT_CHANNEL"]))
	g.Expect(bundle.Channels).To(ContainElement(bundle.DefaultChannel))
}
