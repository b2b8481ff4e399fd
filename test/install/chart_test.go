package install

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
)

// loadChart loads dist/chart with Helm's loader.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.LoadDir(repoPath("dist", "chart"))
	if err != nil {
		t.Fatalf("load dist/chart: %v", err)
	}
	return ch
}

// helmConfig is Helm's action configuration for namespace ns of the cluster of kubeconfig,
// with releases stored in Secrets as the helm CLI stores them.
func helmConfig(t *testing.T, kubeconfig, ns string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, ns, "secret", func(format string, v ...any) { t.Logf("helm: "+format, v...) }); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func helmInstall(t *testing.T, cfg *action.Configuration, name, ns string, values map[string]any) *release.Release {
	t.Helper()
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = name, ns, true
	rel, err := in.RunWithContext(t.Context(), loadChart(t), values)
	if err != nil {
		t.Fatalf("helm install %s: %v", name, err)
	}
	return rel
}

// manifestObjects are the objects of a release's manifest.
func manifestObjects(t *testing.T, rel *release.Release) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, []byte(rel.Manifest))
}

// The chart as a user runs it against a cluster, with the Helm library's install, upgrade and
// uninstall actions (Helm validates each object strictly against the API server):
//
//  1. every namespace (watchNamespaces empty): the CRDs, the RBAC bound cluster-wide, the
//     manager with exactly that RBAC reconciles the samples; an upgrade changes the manager's
//     flags and keeps the CRDs; uninstall removes the operator and keeps the CRDs, every
//     ControlPlane and KubeOperaApp;
//  2. watchNamespaces [team-a] with crds.enabled false (the CRDs kept by release 1): the
//     namespaced rules are bound in team-a and the release namespace only, the manager reconciles
//     the samples in team-a and never touches those in team-b, with no request refused.
func TestChartInstallUpgradeUninstall(t *testing.T) {
	g := NewWithT(t)
	env := startEnv(t)
	admin := env.Client
	kubeconfig := adminKubeconfig(t, env)

	var kept []*unstructured.Unstructured
	t.Run("all namespaces", func(t *testing.T) {
		g := NewWithT(t)
		const name, ns = "ko", "ko-system"
		cfg := helmConfig(t, kubeconfig, ns)
		rel := helmInstall(t, cfg, name, ns, nil)
		g.Expect(rel.Info.Status).To(Equal(release.StatusDeployed))
		objs := manifestObjects(t, rel)
		g.Expect(ofKind(objs, "CustomResourceDefinition")).To(HaveLen(2))
		g.Expect(ofKind(objs, "RoleBinding")).To(HaveLen(1), "only the leader election RoleBinding")
		g.Expect(ofKind(objs, "ClusterRoleBinding")).To(HaveLen(2))

		dep := storedDeployment(t, admin, ns, "ko-kubeopera-operator-controller-manager")
		g.Expect(managerContainer(dep).Image).To(Equal(expectedImage(t)))
		m := runManager(t, env, dep)
		kept = createSamples(t, admin, "ko-demo")
		waitReconciled(t, admin, kept)
		m.stop(t, env)

		t.Run("aggregated user roles", func(t *testing.T) {
			checkAggregatedRoles(t, env, "ko-kubeopera-operator")
		})

		// helm upgrade with other values: the Deployment follows, the CRDs stay the release's.
		up := action.NewUpgrade(cfg)
		up.Namespace = ns
		rel, err := up.RunWithContext(t.Context(), name, loadChart(t), map[string]any{
			"extraArgs":   []any{"--app-max-concurrent-reconciles=8"},
			"controllers": map[string]any{"controlPlane": map[string]any{"enabled": false}},
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rel.Version).To(Equal(2))
		dep = storedDeployment(t, admin, ns, dep.Name)
		g.Expect(managerContainer(dep).Args).To(ContainElements("--app-max-concurrent-reconciles=8", "--enable-controlplane-controller=false"))
		m = runManager(t, env, dep)
		upgraded := createSamples(t, admin, "ko-upgraded")
		waitReconciled(t, admin, upgraded[1:])  // the app
		expectUntouched(t, admin, upgraded[:1]) // the ControlPlane reconciler is off
		m.stop(t, env)

		res, err := action.NewUninstall(cfg).Run(name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Info).To(ContainSubstring("kept due to the resource policy"))
		g.Expect(apierrors.IsNotFound(admin.Get(t.Context(), client.ObjectKeyFromObject(dep), &appsv1.Deployment{}))).To(BeTrue())
		g.Expect(apierrors.IsNotFound(admin.Get(t.Context(), client.ObjectKey{Name: "ko-kubeopera-operator-manager-namespaced"}, &rbacv1.ClusterRole{}))).To(BeTrue())
		expectStillThere(t, admin, kept)
	})

	t.Run("watched namespaces", func(t *testing.T) {
		g := NewWithT(t)
		const name, ns = "kons", "kons-system"
		if len(kept) == 0 {
			t.Skip("needs the CRDs the first release kept")
		}
		// The namespaces exist before the install, as the RoleBindings need them.
		inside := createSamples(t, admin, "team-a")
		outside := createSamples(t, admin, "team-b")
		cfg := helmConfig(t, kubeconfig, ns)
		rel := helmInstall(t, cfg, name, ns, map[string]any{
			"watchNamespaces": []any{"team-a"},
			"crds":            map[string]any{"enabled": false},
		})
		objs := manifestObjects(t, rel)
		g.Expect(ofKind(objs, "CustomResourceDefinition")).To(BeEmpty())
		var bound []string
		for _, rb := range ofKind(objs, "RoleBinding") {
			bound = append(bound, rb.GetNamespace()+"/"+rb.GetName())
		}
		g.Expect(bound).To(ConsistOf("team-a/kons-kubeopera-operator-manager", ns+"/kons-kubeopera-operator-manager",
			ns+"/kons-kubeopera-operator-leader-election"))
		for _, crb := range ofKind(objs, "ClusterRoleBinding") {
			roleRef, _, _ := unstructured.NestedString(crb.Object, "roleRef", "name")
			g.Expect(roleRef).To(Equal("kons-kubeopera-operator-manager-cluster"), "only the cluster-wide rules are bound cluster-wide")
		}

		dep := storedDeployment(t, admin, ns, "kons-kubeopera-operator-controller-manager")
		g.Expect(envValue(managerContainer(dep), "WATCH_NAMESPACE")).To(Equal("team-a"))
		m := runManager(t, env, dep)
		waitReconciled(t, admin, inside)
		// The manager's caches are synced and it reconciled team-a: what is outside is as created.
		expectUntouched(t, admin, outside)
		m.stop(t, env)
		_, err := action.NewUninstall(cfg).Run(name)
		g.Expect(err).NotTo(HaveOccurred())
		expectStillThere(t, admin, inside)
	})
	g.Expect(kept).NotTo(BeEmpty())
}

// managerContainer is the manager container of a Deployment.
func managerContainer(d *appsv1.Deployment) corev1.Container {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	return corev1.Container{}
}

// envValue is the value of the container's environment variable name.
func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// renderChart renders the chart as `helm template` does (Helm's install action, client only):
// the values are validated against values.schema.json first.
func renderChart(t *testing.T, name, ns string, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	rel, err := renderRelease(t, name, ns, values)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(rel.Manifest) == "" {
		return nil, fmt.Errorf("empty manifest")
	}
	return manifestObjects(t, rel), nil
}
