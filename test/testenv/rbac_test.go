package testenv_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// The manager user of a namespaced install (SingleNamespace "watched") holds the bundle's
// `permissions` there and nowhere else, and its `clusterPermissions` cluster-wide; every request
// outside that is refused, and the audit log records both kinds with the user's name.
func TestManagerConfigNamespaced(t *testing.T) {
	env := testenv.StartForTest(t, testenv.Options{})
	g := NewWithT(t)
	ctx := context.Background()
	for _, ns := range []string{"watched", "unwatched"} {
		g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	cfg := env.MustManagerConfig(t, "single-ns-manager", "watched")
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	// Granted: what the reconcilers do in the watched namespace.
	g.Expect(c.List(ctx, &corev1.SecretList{}, client.InNamespace("watched"))).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "watched", Name: "cm"}})).To(Succeed())
	g.Expect(c.List(ctx, &tenantv1alpha1.TenantList{}, client.InNamespace("watched"))).To(Succeed())
	g.Expect(c.List(ctx, &kubeoperav1alpha1.KubeOperaAppList{}, client.InNamespace("watched"))).To(Succeed())

	// Refused: the same outside the watched namespace, cluster-wide reads (Tenants included:
	// they are namespaced permissions), verbs the bundle does not grant, cluster objects.
	forbidden := map[string]error{
		"list Secrets in an unwatched namespace": c.List(ctx, &corev1.SecretList{}, client.InNamespace("unwatched")),
		"list Secrets cluster-wide":              c.List(ctx, &corev1.SecretList{}),
		"list Tenants cluster-wide":              c.List(ctx, &tenantv1alpha1.TenantList{}),
		"list Tenants in an unwatched namespace": c.List(ctx, &tenantv1alpha1.TenantList{}, client.InNamespace("unwatched")),
		"create a KubeOperaApp": c.Create(ctx, testfixture.KubeOperaApp(
			testfixture.AppInNamespace("watched"), testfixture.AppNamed("x"),
		)),
		"get a Namespace":      c.Get(ctx, client.ObjectKey{Name: "watched"}, &corev1.Namespace{}),
		"create a ClusterRole": c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "escalate"}}),
		"list Nodes":           c.List(ctx, &corev1.NodeList{}),
	}
	for what, err := range forbidden {
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want Forbidden, got %v", what, err)
	}

	// The audit log has the user's requests, allowed and refused.
	reqs, err := env.ManagerRequests()
	g.Expect(err).NotTo(HaveOccurred())
	var allowedList, refusedList bool
	for _, r := range reqs {
		g.Expect(r.User).To(Equal("single-ns-manager"))
		if r.Verb == "list" && r.Resource == "secrets" && r.Namespace == "watched" && r.Code == http.StatusOK {
			allowedList = true
		}
		if r.Verb == "list" && r.Resource == "secrets" && r.Namespace == "unwatched" && r.Code == http.StatusForbidden {
			refusedList = true
		}
	}
	g.Expect(allowedList).To(BeTrue(), "the allowed list is not in the audit log: %v", reqs)
	g.Expect(refusedList).To(BeTrue(), "the refused list is not in the audit log: %v", reqs)
	g.Expect(testenv.Refused(reqs)).To(HaveLen(len(forbidden)), "every refused request is in the audit log")
}

// The manager user of an AllNamespaces install holds `permissions` in every namespace, and still
// nothing beyond the bundle's rules.
func TestManagerConfigAllNamespaces(t *testing.T) {
	env := testenv.StartForTest(t, testenv.Options{})
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})).To(Succeed())
	cfg := env.MustManagerConfig(t, "all-ns-manager")
	c, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(c.List(ctx, &corev1.SecretList{})).To(Succeed())
	g.Expect(c.List(ctx, &tenantv1alpha1.TenantList{})).To(Succeed())
	g.Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}})).To(Succeed())

	err = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "delete a Namespace: %v", err)
	err = c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "escalate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "all-ns-manager"}},
	})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "bind cluster-admin: %v", err)
	err = c.Delete(ctx, &kubeoperav1alpha1.KubeOperaApp{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "x"}})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "delete a KubeOperaApp (the bundle grants no delete): %v", err)
}

// The marker reader expands every marker of a file to (group, resource, verb), and Unused names
// exactly the ones no request used.
func TestMarkerPermissionsAndUnused(t *testing.T) {
	g := NewWithT(t)
	perms, err := testenv.MarkerPermissions("controllers/app/rbac.go")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(perms).To(ContainElements(
		testenv.Permission{Group: "kubeopera.io", Resource: "kubeoperaapps/status", Verb: "patch"},
		testenv.Permission{Group: "", Resource: "secrets", Verb: "get"},
	))
	for _, p := range perms {
		g.Expect(p.Verb).NotTo(Or(BeEmpty(), Equal("*")))
		g.Expect(strings.Contains(p.Resource, "*")).To(BeFalse())
	}
	reqs := []testenv.Request{{Verb: "patch", Group: "kubeopera.io", Resource: "kubeoperaapps", Subresource: "status"}}
	unused := testenv.Unused(perms, reqs)
	g.Expect(unused).To(HaveLen(len(perms) - 1))
	g.Expect(unused).NotTo(ContainElement(testenv.Permission{Group: "kubeopera.io", Resource: "kubeoperaapps/status", Verb: "patch"}))
}

// A marker with resourceNames grants the verb on each name, and only a request for that name
// uses it.
func TestMarkerPermissionsOnNamedObjects(t *testing.T) {
	g := NewWithT(t)
	perms, err := testenv.MarkerPermissions("controllers/controlplane/rbac.go")
	g.Expect(err).NotTo(HaveOccurred())
	sqlite := testenv.Permission{Group: "", Resource: "persistentvolumeclaims", Verb: "delete", Name: "controller-sqlite"}
	g.Expect(perms).To(ContainElement(sqlite))
	g.Expect(perms).NotTo(ContainElement(testenv.Permission{Group: "", Resource: "persistentvolumeclaims", Verb: "delete"}),
		"delete on PVCs is granted by name only")
	g.Expect(sqlite.String()).To(Equal("delete /persistentvolumeclaims controller-sqlite"))

	other := []testenv.Request{{Verb: "delete", Resource: "persistentvolumeclaims", Name: "js-data-nats-0"}}
	g.Expect(testenv.Unused(perms, other)).To(ContainElement(sqlite), "a request for another name does not use it")
	named := []testenv.Request{{Verb: "delete", Resource: "persistentvolumeclaims", Name: "controller-sqlite"}}
	g.Expect(testenv.Unused(perms, named)).NotTo(ContainElement(sqlite))
}
