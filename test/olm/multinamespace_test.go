package olm

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/test/olm/olmtest"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

const (
	// operatorNamespace is where the Subscription installs the operator.
	operatorNamespace = "kubeopera-operator-system"
)

// OLM in MultiNamespace mode, without OLM: the OperatorGroup targets ns-a and ns-b. The test
// applies the CSV's install strategy as OLM does (the ServiceAccount; `permissions` as Roles in the
// operator's namespace and in each target namespace; `clusterPermissions` as a ClusterRole; the
// Deployment with olm.targetNamespaces on its pod template), resolves the Deployment's environment
// against that pod template, and starts the manager as main.go does from that environment and
// those arguments, authenticated as the operator's ServiceAccount. The CSV's alm-examples are
// created in ns-a (a target) and in ns-c (not a target): the ones in ns-a are reconciled, the ones
// in ns-c are never touched. Running with only the bundle's RBAC also proves the manager neither
// needs nor tries anything outside its target namespaces beyond clusterPermissions.
func TestMultiNamespaceInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("envtest")
	}
	env := testenv.StartForTest(t, testenv.Options{})
	g := NewWithT(t)
	ctx := t.Context()
	admin := env.Client
	csv := loadBundle(t).CSV
	targets := []string{"ns-a", "ns-b"}
	const outside = "ns-c"

	for _, ns := range []string{operatorNamespace, "ns-a", "ns-b", outside} {
		g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	sa := applyInstallStrategy(ctx, t, admin, csv, targets)

	// The container's environment as the kubelet resolves it from the stored Deployment.
	dep, _ := olmtest.InstallDeployment(t, csv)
	stored := deploymentFromStrategy(dep, operatorNamespace)
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(stored), stored)).To(Succeed())
	var container corev1.Container
	for _, c := range stored.Spec.Template.Spec.Containers {
		if c.Name == olmtest.ManagerContainer {
			container = c
		}
	}
	envVars := olmtest.ResolveEnv(t, container, stored.Spec.Template.ObjectMeta, operatorNamespace)
	g.Expect(envVars).To(HaveKeyWithValue("WATCH_NAMESPACE", "ns-a,ns-b"))

	// main.go: flags from the container's arguments, namespaces and images from its environment.
	opts := controllers.DefaultOptions()
	fs := flag.NewFlagSet(controllers.Name, flag.ContinueOnError)
	controllers.BindFlags(fs, &opts)
	g.Expect(fs.Parse(container.Args)).To(Succeed())
	watch, err := controllers.ParseWatchNamespaces(envVars["WATCH_NAMESPACE"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(watch).To(Equal(targets))
	opts.WatchNamespaces = watch
	for k, v := range envVars {
		if strings.HasPrefix(k, "RELATED_IMAGE_") {
			t.Setenv(k, v)
		}
	}
	opts.ControlPlane.Images = controllers.ImagesFromEnv(opts.ControlPlane.Images)
	// What differs outside a pod: no fixed ports, the Lease namespace a pod would know from its
	// own namespace, a writable Git cache, and no Controller API to reach.
	g.Expect(opts.LeaderElect).To(BeTrue(), "the bundle's Deployment runs with --leader-elect")
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.LeaderElectionNamespace = operatorNamespace
	opts.Apps.GitCacheDir = t.TempDir()
	opts.ControlPlane.ControllerEndpointTemplate = "127.0.0.1:1"

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: fmt.Sprintf("system:serviceaccount:%s:%s", sa.Namespace, sa.Name),
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"},
	}
	captureLogs(t)
	mgr, err := controllers.New(cfg, opts)
	g.Expect(err).NotTo(HaveOccurred())
	mgrCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})

	// The alm-examples, in a target namespace and outside.
	inTarget := olmtest.CreateExamples(ctx, t, admin, csv, "ns-a")
	outsideObjs := olmtest.CreateExamples(ctx, t, admin, csv, outside)
	for kind, obj := range inTarget {
		g.Eventually(func(g Gomega) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			g.Expect(olmtest.Reconciled(got)).To(BeTrue(), "%s %s/%s not reconciled yet", kind, got.GetNamespace(), got.GetName())
		}, 60*time.Second, 250*time.Millisecond).Should(Succeed())
	}
	// With only the bundle's permissions, the operator writes its operands in the target namespace.
	cp := inTarget["ControlPlane"]
	g.Expect(cp).NotTo(BeNil(), "no ControlPlane alm-example")
	g.Eventually(func() (int, error) { return olmtest.CountOwned(ctx, admin, "ns-a", cp.GetUID()) }, 60*time.Second, 250*time.Millisecond).
		Should(BeNumerically(">", 0), "nothing owned by ControlPlane %s/%s was created", cp.GetNamespace(), cp.GetName())
	g.Consistently(done).ShouldNot(Receive(), "the manager stopped")

	// By now the manager has reconciled what it watches; what is outside must stay as created.
	g.Consistently(func(g Gomega) {
		for kind, obj := range outsideObjs {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			g.Expect(got.GetResourceVersion()).To(Equal(obj.GetResourceVersion()), "%s in %s was modified", kind, outside)
			g.Expect(olmtest.Reconciled(got)).To(BeFalse())
			g.Expect(olmtest.CountOwned(ctx, admin, outside, obj.GetUID())).To(BeZero())
		}
	}, 3*time.Second, 250*time.Millisecond).Should(Succeed())
}

// captureLogs sends controller-runtime's logs to a buffer that is printed if the test fails.
func captureLogs(t *testing.T) {
	t.Helper()
	buf := &syncBuffer{}
	ctrl.SetLogger(funcr.New(func(prefix, args string) {
		buf.writeLine(prefix + " " + args)
	}, funcr.Options{Verbosity: 1}))
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("OLM_TEST_LOGS") != "" {
			t.Logf("manager logs:\n%s", buf.String())
		}
	})
}

// syncBuffer is a line buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) writeLine(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
	b.buf.WriteByte('\n')
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// applyInstallStrategy creates what OLM creates for a CSV in MultiNamespace mode and returns the
// operator's ServiceAccount.
func applyInstallStrategy(ctx context.Context, t *testing.T, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion, targets []string) *corev1.ServiceAccount {
	t.Helper()
	g := NewWithT(t)
	strategy := csv.Spec.InstallStrategy.StrategySpec
	dep, _ := olmtest.InstallDeployment(t, csv)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{
		Name: dep.Spec.Template.Spec.ServiceAccountName, Namespace: operatorNamespace,
	}}
	g.Expect(c.Create(ctx, sa)).To(Succeed())
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}

	for i, p := range strategy.Permissions {
		g.Expect(p.ServiceAccountName).To(Equal(sa.Name))
		for _, ns := range append([]string{operatorNamespace}, targets...) {
			name := fmt.Sprintf("%s-%d", csv.Name, i)
			g.Expect(c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Rules: p.Rules})).To(Succeed())
			g.Expect(c.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
				Subjects:   subjects,
			})).To(Succeed())
		}
	}
	for i, p := range strategy.ClusterPermissions {
		g.Expect(p.ServiceAccountName).To(Equal(sa.Name))
		name := fmt.Sprintf("%s-cluster-%d", csv.Name, i)
		g.Expect(c.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules})).To(Succeed())
		g.Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   subjects,
		})).To(Succeed())
	}

	d := deploymentFromStrategy(dep, operatorNamespace)
	if d.Spec.Template.Annotations == nil {
		d.Spec.Template.Annotations = map[string]string{}
	}
	d.Spec.Template.Annotations[olmtest.TargetNamespacesAnnotation] = strings.Join(targets, ",")
	d.Spec.Template.Annotations["olm.operatorNamespace"] = operatorNamespace
	g.Expect(c.Create(ctx, d)).To(Succeed())
	return sa
}
