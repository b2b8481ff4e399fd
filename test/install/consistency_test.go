package install

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/chartutil"
)

// chartutilKubeVersion is the Kubernetes version charts are rendered for without a cluster:
// the version of the client libraries, which the API servers of the tests run.
var chartutilKubeVersion = chartutil.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}

var makefileVar = regexp.MustCompile(`(?m)^([A-Z0-9_]+) \?= (.*)$`)

// makefileVars returns the `NAME ?= value` defaults of the Makefile.
func makefileVars(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(repoPath("Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range makefileVar.FindAllStringSubmatch(string(data), -1) {
		vars[m[1]] = strings.TrimSpace(m[2])
	}
	return vars
}

// expectedImage is the operator image of this version: IMAGE_TAG_BASE:v$(VERSION).
func expectedImage(t *testing.T) string {
	t.Helper()
	v := makefileVars(t)
	if v["IMAGE_TAG_BASE"] == "" || v["VERSION"] == "" {
		t.Fatal("the Makefile sets no IMAGE_TAG_BASE or VERSION")
	}
	return v["IMAGE_TAG_BASE"] + ":v" + v["VERSION"]
}

func readObjects(t *testing.T, elem ...string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(repoPath(elem...))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, b)
}

// defaultChart renders the chart with its default values, as release kubeopera-operator in
// kubeopera-operator-system: the names the installer uses.
func defaultChart(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderChart(t, "kubeopera-operator", installerNamespace, nil)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func deploymentOf(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	deps := ofKind(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("%d Deployments, want 1", len(deps))
	}
	d := &appsv1.Deployment{}
	into(t, deps[0], d)
	return d
}

// One image reference everywhere, IMAGE_TAG_BASE:v$(VERSION), by tag: the Makefile, the CSV
// (containerImage, the Deployment, relatedImages), config/manager, dist/install.yaml, the
// chart's default and the README; the chart's version and appVersion are VERSION.
func TestImageReferenceIsTheSameEverywhere(t *testing.T) {
	g := NewWithT(t)
	want := expectedImage(t)
	version := makefileVars(t)["VERSION"]

	csvObjs := readObjects(t, "bundle", "manifests", "kubeopera-operator.clusterserviceversion.yaml")
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	b, err := yaml.Marshal(csvObjs[0].Object)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.Unmarshal(b, csv)).To(Succeed())
	g.Expect(csv.Annotations).To(HaveKeyWithValue("containerImage", want))
	g.Expect(csv.Spec.Version.String()).To(Equal(version))
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	g.Expect(deps).To(HaveLen(1))
	g.Expect(deps[0].Spec.Template.Spec.Containers[0].Image).To(Equal(want))
	var related []string
	for _, r := range csv.Spec.RelatedImages {
		related = append(related, r.Image)
	}
	g.Expect(related).To(ContainElement(want))

	var kust struct {
		Images []struct{ Name, NewName, NewTag string } `json:"images"`
	}
	b, err = os.ReadFile(repoPath("config", "manager", "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.Unmarshal(b, &kust)).To(Succeed())
	g.Expect(kust.Images).To(HaveLen(1))
	g.Expect(kust.Images[0].NewName + ":" + kust.Images[0].NewTag).To(Equal(want))

	installer := deploymentOf(t, readObjects(t, "dist", "install.yaml"))
	g.Expect(managerContainer(installer).Image).To(Equal(want))
	chart := deploymentOf(t, defaultChart(t))
	g.Expect(managerContainer(chart).Image).To(Equal(want))
	ch := loadChart(t)
	g.Expect(ch.Metadata.Version).To(Equal(version))
	g.Expect(ch.Metadata.AppVersion).To(Equal(version))

	readme, err := os.ReadFile(repoPath("README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(readme)).To(ContainSubstring("`" + want + "`"))
	// Pinned by digest: the chart's image.digest wins over the tag.
	pinned, err := renderChart(t, "kubeopera-operator", installerNamespace, map[string]any{
		"image": map[string]any{"digest": "sha256:" + strings.Repeat("ab", 32)},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(managerContainer(deploymentOf(t, pinned)).Image).To(Equal(strings.Split(want, ":v")[0] + "@sha256:" + strings.Repeat("ab", 32)))
}

// The chart with its default values installs what dist/install.yaml installs (and the OLM
// bundle): the same CRDs, the same manager container and pod, the same RBAC rules, the same
// user roles, under the same names.
func TestChartMatchesInstaller(t *testing.T) {
	g := NewWithT(t)
	installer := readObjects(t, "dist", "install.yaml")
	chart := defaultChart(t)

	// CRDs: the same spec (the chart adds Helm's labels and the keep policy).
	for _, crd := range ofKind(installer, "CustomResourceDefinition") {
		c := find(chart, "CustomResourceDefinition", crd.GetName())
		g.Expect(c).NotTo(BeNil(), "the chart has no CRD %s", crd.GetName())
		g.Expect(c.Object["spec"]).To(Equal(crd.Object["spec"]), "CRD %s", crd.GetName())
		g.Expect(c.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"))
	}
	g.Expect(ofKind(chart, "CustomResourceDefinition")).To(HaveLen(len(ofKind(installer, "CustomResourceDefinition"))))

	// The manager: same names, same container but for Helm's labels and imagePullPolicy.
	inst, ch := deploymentOf(t, installer), deploymentOf(t, chart)
	g.Expect(ch.Name).To(Equal(inst.Name))
	g.Expect(ch.Namespace).To(Equal(inst.Namespace))
	g.Expect(ch.Spec.Template.Spec.ServiceAccountName).To(Equal(inst.Spec.Template.Spec.ServiceAccountName))
	ic, cc := managerContainer(inst), managerContainer(ch)
	cc.ImagePullPolicy = ic.ImagePullPolicy
	g.Expect(cc).To(Equal(ic))
	ipod, cpod := inst.Spec.Template.Spec, ch.Spec.Template.Spec
	ipod.Containers, cpod.Containers = nil, nil
	g.Expect(cpod).To(Equal(ipod))
	g.Expect(ch.Spec.Replicas).To(Equal(inst.Spec.Replicas))
	g.Expect(ch.Spec.Template.Annotations).To(Equal(inst.Spec.Template.Annotations))

	// RBAC: the manager's rules (cluster mode: every rule bound cluster-wide), leader election,
	// the metrics reader, the aggregated roles.
	g.Expect(ruleSet(t, chart, "ClusterRole", "kubeopera-operator-manager-namespaced", "kubeopera-operator-manager-cluster")).
		To(Equal(ruleSet(t, installer, "ClusterRole", "kubeopera-operator-manager-role")))
	g.Expect(ruleSet(t, chart, "Role", "kubeopera-operator-leader-election")).
		To(Equal(ruleSet(t, installer, "Role", "kubeopera-operator-leader-election-role")))
	g.Expect(ruleSet(t, chart, "ClusterRole", "kubeopera-operator-metrics-reader")).
		To(Equal(ruleSet(t, installer, "ClusterRole", "kubeopera-operator-metrics-reader")))
	for _, name := range []string{"controlplane-editor", "controlplane-viewer", "kubeoperaapp-editor", "kubeoperaapp-viewer"} {
		full := "kubeopera-operator-" + name
		g.Expect(ruleSet(t, chart, "ClusterRole", full)).To(Equal(ruleSet(t, installer, "ClusterRole", full)), full)
		ir, cr := find(installer, "ClusterRole", full), find(chart, "ClusterRole", full)
		for k, v := range ir.GetLabels() {
			if strings.HasPrefix(k, "rbac.authorization.k8s.io/") {
				g.Expect(cr.GetLabels()).To(HaveKeyWithValue(k, v), full)
			}
		}
	}
	// The metrics Service selects the manager's pods.
	svc := &corev1.Service{}
	into(t, ofKind(chart, "Service")[0], svc)
	g.Expect(svc.Spec.Selector).To(Equal(ch.Spec.Selector.MatchLabels))

	// The same minimum Kubernetes version as the bundle.
	csv := readObjects(t, "bundle", "manifests", "kubeopera-operator.clusterserviceversion.yaml")[0]
	minKube, _, _ := unstructured.NestedString(csv.Object, "spec", "minKubeVersion")
	g.Expect(loadChart(t).Metadata.KubeVersion).To(Equal(">=" + minKube + "-0"))
}

// ruleSet is the set of (group, resource, verb) and non-resource URLs the named roles grant.
func ruleSet(t *testing.T, objs []*unstructured.Unstructured, kind string, names ...string) []string {
	t.Helper()
	var out []string
	for _, name := range names {
		o := find(objs, kind, name)
		if o == nil {
			t.Fatalf("no %s %s", kind, name)
		}
		var role rbacv1.ClusterRole
		into(t, o, &role)
		for _, r := range role.Rules {
			for _, v := range r.Verbs {
				for _, u := range r.NonResourceURLs {
					out = append(out, u+" "+v)
				}
				for _, grp := range r.APIGroups {
					for _, res := range r.Resources {
						out = append(out, grp+"/"+res+" "+v+" "+strings.Join(r.ResourceNames, ","))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}
