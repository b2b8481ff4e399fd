package testenv

// The manager runs in the suites as OLM would run it: as a user holding exactly the RBAC the
// bundle's CSV grants, never as the envtest admin (docs/olm.md, "Least privilege, proven").
//
//   - `permissions` (namespaced rules): in a namespaced install (OwnNamespace, SingleNamespace,
//     MultiNamespace) a Role and a RoleBinding in every watched namespace, as OLM copies them into
//     each target namespace; in an AllNamespaces install a ClusterRole and a ClusterRoleBinding.
//   - `clusterPermissions`: a ClusterRole and a ClusterRoleBinding, in every install mode.
//
// The rules are read from the committed CSV (bundle/manifests), which is what OLM grants; the
// CSV is generated from the RBAC markers (`make bundle`, checked by `make bundle-verify`).
// The user is an envtest client-certificate user in the group ManagerGroup and no other group
// but system:authenticated; the API server's audit log records that group's requests only (see
// auditPolicy), so a suite can list what the manager really asked for (ManagerRequests).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// ManagerGroup is the group of every manager user ManagerConfig creates. Nothing is bound to it:
// it only marks the requests the audit log keeps.
const ManagerGroup = "kubeopera:manager"

// CSVPath is the bundle's ClusterServiceVersion, relative to the repository root.
const CSVPath = "bundle/manifests/kubeopera-operator.clusterserviceversion.yaml"

// BundleRBAC is what the CSV grants the operator's ServiceAccount.
type BundleRBAC struct {
	// Permissions are the namespaced rules (spec.install.spec.permissions).
	Permissions []rbacv1.PolicyRule
	// ClusterPermissions are the cluster-wide rules (spec.install.spec.clusterPermissions).
	ClusterPermissions []rbacv1.PolicyRule
}

var (
	bundleOnce sync.Once
	bundleRBAC *BundleRBAC
	bundleErr  error
)

// LoadBundleRBAC reads the rules of the committed CSV (once per process).
func LoadBundleRBAC() (*BundleRBAC, error) {
	bundleOnce.Do(func() { bundleRBAC, bundleErr = readBundleRBAC(filepath.Join(Root(), CSVPath)) })
	return bundleRBAC, bundleErr
}

func readBundleRBAC(path string) (*BundleRBAC, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the repository's own CSV
	if err != nil {
		return nil, fmt.Errorf("read the CSV: %w", err)
	}
	var csv operatorsv1alpha1.ClusterServiceVersion
	if err := yaml.Unmarshal(b, &csv); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	spec := csv.Spec.InstallStrategy.StrategySpec
	out := &BundleRBAC{}
	for _, p := range spec.Permissions {
		out.Permissions = append(out.Permissions, p.Rules...)
	}
	for _, p := range spec.ClusterPermissions {
		out.ClusterPermissions = append(out.ClusterPermissions, p.Rules...)
	}
	if len(out.Permissions) == 0 {
		return nil, fmt.Errorf("%s: no permissions", path)
	}
	return out, nil
}

// ManagerConfig creates a user named name holding exactly the bundle's RBAC, as OLM grants it for
// an install watching namespaces (none: AllNamespaces), and returns a rest.Config of that user.
// Every namespace must exist. The bindings are effective when it returns (asked of the API
// server's authorizer).
func (e *Env) ManagerConfig(ctx context.Context, name string, namespaces ...string) (*rest.Config, error) {
	rules, err := LoadBundleRBAC()
	if err != nil {
		return nil, err
	}
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	roleName := "kubeopera-test-manager:" + name
	objs := []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName + ":cluster"}, Rules: rules.ClusterPermissions},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: roleName + ":cluster"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName + ":cluster"},
			Subjects:   []rbacv1.Subject{subject},
		},
	}
	if len(namespaces) == 0 {
		objs = append(objs,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: roleName}, Rules: rules.Permissions},
			&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: roleName},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
				Subjects:   []rbacv1.Subject{subject},
			})
	}
	for _, ns := range namespaces {
		if err := e.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
			return nil, fmt.Errorf("watched namespace %q: %w", ns, err)
		}
		objs = append(objs,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: roleName}, Rules: rules.Permissions},
			&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: roleName},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: roleName},
				Subjects:   []rbacv1.Subject{subject},
			})
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("create %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	u, err := e.AddUser(envtest.User{Name: name, Groups: []string{ManagerGroup}}, e.Config)
	if err != nil {
		return nil, fmt.Errorf("add user %q: %w", name, err)
	}
	cfg := u.Config()
	// The RBAC authorizer reads bindings from an informer: wait until the first namespaced rule
	// is allowed where it was granted, and the first cluster rule cluster-wide.
	granted := namespaces
	if len(granted) == 0 {
		granted = []string{""}
	}
	var checks []authorizationv1.ResourceAttributes
	for _, ns := range granted {
		checks = append(checks, attributes(rules.Permissions[0], ns))
	}
	if len(rules.ClusterPermissions) > 0 {
		checks = append(checks, attributes(rules.ClusterPermissions[0], ""))
	}
	for _, a := range checks {
		if err := e.waitAllowed(ctx, name, a); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// attributes is the first (verb, group, resource) of rule, in namespace ns.
func attributes(rule rbacv1.PolicyRule, ns string) authorizationv1.ResourceAttributes {
	a := authorizationv1.ResourceAttributes{Namespace: ns, Verb: rule.Verbs[0], Resource: rule.Resources[0]}
	if len(rule.APIGroups) > 0 {
		a.Group = rule.APIGroups[0]
	}
	return a
}

// ErrNotAllowed means a SubjectAccessReview kept refusing a request the bindings grant.
var ErrNotAllowed = errors.New("not allowed")

func (e *Env) waitAllowed(ctx context.Context, user string, a authorizationv1.ResourceAttributes) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{ManagerGroup, "system:authenticated"}, ResourceAttributes: &a,
		}}
		if err := e.Client.Create(ctx, sar); err != nil {
			return false, err
		}
		last = sar.Status.Reason
		return sar.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s %s/%s in %q for %s (%s): %w", ErrNotAllowed, a.Verb, a.Group, a.Resource, a.Namespace, user, last, err)
	}
	return nil
}

// MustManagerConfig is ManagerConfig for a test: a failure fails it.
func (e *Env) MustManagerConfig(t interface {
	Helper()
	Context() context.Context
	Fatal(args ...any)
}, name string, namespaces ...string) *rest.Config {
	t.Helper()
	cfg, err := e.ManagerConfig(t.Context(), name, namespaces...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// KubeconfigFor is a kubeconfig file's content for cfg (a user of AddUser or ManagerConfig:
// client certificate and key, and the API server's CA), for a process that reads KUBECONFIG.
func KubeconfigFor(cfg *rest.Config) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["user"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "user"}
	kc.CurrentContext = "user"
	return clientcmd.Write(*kc)
}
