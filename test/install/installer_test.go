package install

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// installerNamespace is where dist/install.yaml puts the operator.
const installerNamespace = "kubeopera-operator-system"

// dist/install.yaml as the README installs it: `kubectl apply --server-side` (kubectl validates
// strictly against the API server), then the manager with exactly the installer's RBAC reconciles
// the samples; the aggregated roles give namespace editors and viewers what they need; `make
// undeploy` (hack/installer.sh uninstall) removes the operator and keeps the CRDs and the data.
func TestInstallerInstallsReconcilesAndUninstalls(t *testing.T) {
	g := NewWithT(t)
	env := startEnv(t)
	admin := env.Client
	kubeconfig := adminKubeconfig(t, env)

	out := kubectl(t, kubeconfig, "apply", "--server-side", "--validate=strict", "-f", repoPath("dist", "install.yaml"))
	g.Expect(out).To(ContainSubstring("deployment.apps/kubeopera-operator-controller-manager serverside-applied"))
	kubectl(t, kubeconfig, "wait", "--for=condition=Established", "crd/controlplanes.datasance.com", "crd/kubeoperaapps.kubeopera.io")

	dep := storedDeployment(t, admin, installerNamespace, "kubeopera-operator-controller-manager")
	m := runManager(t, env, dep)
	objs := createSamples(t, admin, "installer-demo")
	waitReconciled(t, admin, objs)
	m.stop(t, env)

	t.Run("aggregated user roles", func(t *testing.T) {
		checkAggregatedRoles(t, env, "kubeopera-operator")
	})

	// make undeploy.
	cmd := exec.CommandContext(t.Context(), repoPath("hack", "installer.sh"), "uninstall")
	cmd.Env = append(testenv.Environ("KUBECONFIG", "KUBECTL"), "KUBECONFIG="+kubeconfig, "KUBECTL="+testenv.Kubectl())
	b, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(b))
	g.Expect(apierrors.IsNotFound(admin.Get(t.Context(), client.ObjectKeyFromObject(dep), dep))).To(BeTrue(), "the Deployment is gone")
	crbs := &rbacv1.ClusterRoleBindingList{}
	g.Expect(admin.List(t.Context(), crbs, client.MatchingLabels{"app.kubernetes.io/part-of": "kubeopera-operator"})).To(Succeed())
	g.Expect(crbs.Items).To(BeEmpty())
	expectStillThere(t, admin, objs)
	g.Expect(admin.Get(t.Context(), client.ObjectKey{Name: installerNamespace}, &corev1.Namespace{})).To(Succeed(), "the namespace stays")
}

// checkAggregatedRoles checks the editor and viewer ClusterRoles of an install (names prefixed
// by prefix): the API server's own admin, edit and view roles select them by their labels (the
// aggregation controller of kube-controller-manager, which envtest does not run, merges what
// they select), and a user bound to one in a namespace may do exactly what it says there.
func checkAggregatedRoles(t *testing.T, env *testenv.Env, prefix string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	c := env.Client
	selects := func(builtin string, role *rbacv1.ClusterRole) bool {
		br := &rbacv1.ClusterRole{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: builtin}, br)).To(Succeed())
		g.Expect(br.AggregationRule).NotTo(BeNil(), "built-in %s aggregates", builtin)
		for _, sel := range br.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			g.Expect(err).NotTo(HaveOccurred())
			if s.Matches(labels.Set(role.Labels)) {
				return true
			}
		}
		return false
	}
	for _, kind := range []struct{ name, group, resource string }{
		{"controlplane", "datasance.com", "controlplanes"},
		{"kubeoperaapp", "kubeopera.io", "kubeoperaapps"},
	} {
		editor, viewer := &rbacv1.ClusterRole{}, &rbacv1.ClusterRole{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: prefix + "-" + kind.name + "-editor"}, editor)).To(Succeed())
		g.Expect(c.Get(ctx, client.ObjectKey{Name: prefix + "-" + kind.name + "-viewer"}, viewer)).To(Succeed())
		g.Expect(selects("admin", editor)).To(BeTrue(), "admin aggregates %s", editor.Name)
		g.Expect(selects("edit", editor)).To(BeTrue(), "edit aggregates %s", editor.Name)
		g.Expect(selects("view", editor)).To(BeFalse(), "view must not aggregate %s", editor.Name)
		g.Expect(selects("view", viewer)).To(BeTrue(), "view aggregates %s", viewer.Name)

		ns := "roles-" + kind.name
		g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		for user, role := range map[string]string{"editor-" + kind.name: editor.Name, "viewer-" + kind.name: viewer.Name} {
			g.Expect(c.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: user},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
			})).To(Succeed())
		}
		allowed := func(user, verb, sub, namespace string) func() bool {
			return func() bool {
				sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: user, Groups: []string{"system:authenticated"},
					ResourceAttributes: &authorizationv1.ResourceAttributes{
						Namespace: namespace, Verb: verb, Group: kind.group, Resource: kind.resource, Subresource: sub,
					},
				}}
				g.Expect(c.Create(ctx, sar)).To(Succeed())
				return sar.Status.Allowed
			}
		}
		// The RBAC authorizer reads bindings from an informer: wait for the first grant.
		g.Eventually(allowed("editor-"+kind.name, "create", "", ns)).Should(BeTrue())
		g.Eventually(allowed("viewer-"+kind.name, "list", "", ns)).Should(BeTrue())
		for _, verb := range []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"} {
			g.Expect(allowed("editor-"+kind.name, verb, "", ns)()).To(BeTrue(), "editor %s %s", verb, kind.resource)
		}
		g.Expect(allowed("editor-"+kind.name, "get", "status", ns)()).To(BeTrue())
		g.Expect(allowed("editor-"+kind.name, "update", "status", ns)()).To(BeFalse(), "status belongs to the operator")
		g.Expect(allowed("editor-"+kind.name, "create", "", "default")()).To(BeFalse(), "a RoleBinding grants one namespace")
		for _, verb := range []string{"get", "list", "watch"} {
			g.Expect(allowed("viewer-"+kind.name, verb, "", ns)()).To(BeTrue(), "viewer %s %s", verb, kind.resource)
		}
		g.Expect(allowed("viewer-"+kind.name, "get", "status", ns)()).To(BeTrue())
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			g.Expect(allowed("viewer-"+kind.name, verb, "", ns)()).To(BeFalse(), "viewer %s %s", verb, kind.resource)
		}
	}
}

// The Makefile's deploy target renders the installer for any IMG without touching config/ or
// dist/: the rendered file differs from dist/install.yaml by the image only.
func TestDeployRendersTheInstallerForAnyImage(t *testing.T) {
	g := NewWithT(t)
	out := t.TempDir() + "/install.yaml"
	cmd := exec.CommandContext(t.Context(), repoPath("hack", "installer.sh"), "render", out)
	vars := makefileVars(t)
	cmd.Env = append(testenv.Environ("VERSION", "IMG"), "VERSION="+vars["VERSION"], "IMG=registry.example.com/team/operator:dev")
	b, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(b))
	got, err := os.ReadFile(out)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := os.ReadFile(repoPath("dist", "install.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.ReplaceAll(string(got), "registry.example.com/team/operator:dev", expectedImage(t))).To(Equal(string(want)))
	g.Expect(strings.Count(string(got), "registry.example.com/team/operator:dev")).To(BeNumerically(">=", 2), "the Deployment's image and the header")
}
