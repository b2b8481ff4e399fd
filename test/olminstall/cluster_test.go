package olminstall

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimanifests "github.com/operator-framework/api/pkg/manifests"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubeopera/kubeopera-operator/test/olm/olmtest"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

const (
	// catalogNamespace is OLM's global catalog namespace (both OLM binaries get --namespace).
	catalogNamespace = "olm"
	// timeout bounds every wait for OLM or the manager.
	timeout = 90 * time.Second
	poll    = 200 * time.Millisecond
)

// cluster is one API server with OLM running against it and the catalog served.
type cluster struct {
	env    *testenv.Env
	client client.Client
	// clientset is for what controller-runtime's client does not do (TokenRequest).
	clientset *kubernetes.Clientset
	auditLog  string
	dir       string
}

func scheme() *runtime.Scheme {
	s := testenv.Scheme()
	utilruntime.Must(operatorsv1alpha1.AddToScheme(s))
	utilruntime.Must(operatorsv1.AddToScheme(s))
	return s
}

// startCluster starts the API server with the OLM CRDs and the Tenant fixture CRD (it belongs to
// the tenant-controller; the bundle does not ship it), the catalog under `opm serve`, and both
// OLM binaries. The operator's own CRDs are not installed: OLM installs them from the bundle.
// vanilla leaves out the OpenShift admission plugin (testenv.Options.VanillaAdmission).
func startCluster(t *testing.T, vanilla ...bool) *cluster {
	t.Helper()
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.log")
	policy := filepath.Join(dir, "audit-policy.yaml")
	writeFile(t, policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"))
	env := testenv.StartForTest(t, testenv.Options{
		VanillaAdmission: len(vanilla) > 0 && vanilla[0],
		CRDDirs:          []string{filepath.Join(tools.olm, "crds"), filepath.Join(testenv.Root(), "test", "crds")},
		APIServerFlags: map[string]string{
			"advertise-address":        "127.0.0.1",
			"endpoint-reconciler-type": "none",
			"audit-policy-file":        policy,
			"audit-log-path":           audit,
			"audit-log-mode":           "blocking",
		},
	})
	c, err := client.New(env.Config, client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{env: env, client: c, clientset: cs, auditLog: audit, dir: dir}
	cl.createNamespace(t, catalogNamespace)

	kubeconfig, err := env.Kubeconfig("olm")
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigPath := filepath.Join(dir, "olm.kubeconfig")
	writeFile(t, kubeconfigPath, kubeconfig)
	// olm-operator reads only KUBECONFIG; with CI set, OLM's validating round-tripper panics on
	// writes of objects without its labels, so CI is removed from their environment.
	olmEnv := append(testenv.Environ("CI", "KUBECONFIG"), "KUBECONFIG="+kubeconfigPath)
	startProcess(t, dir, "olm-operator", olmEnv, filepath.Join(tools.olm, "olm"),
		"--namespace", catalogNamespace, "--writeStatusName", "")
	startProcess(t, dir, "catalog-operator", olmEnv, filepath.Join(tools.olm, "catalog"),
		"--namespace", catalogNamespace, "--writeStatusName", "")

	addr := serveCatalog(t, dir)
	cs0 := loadYAML[operatorsv1alpha1.CatalogSource](t, "catalogsource.yaml")
	// The image is what a cluster with pods pulls; here the catalog is served on loopback.
	cs0.Spec.Image, cs0.Spec.Address = "", addr
	if err := c.Create(t.Context(), cs0); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		got := &operatorsv1alpha1.CatalogSource{}
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(cs0), got)).To(Succeed())
		g.Expect(got.Status.GRPCConnectionState).NotTo(BeNil())
		g.Expect(got.Status.GRPCConnectionState.LastObservedState).To(Equal("READY"))
	}, timeout, poll).Should(Succeed(), "CatalogSource %s never connected to opm serve at %s", cs0.Name, addr)
	return cl
}

func (c *cluster) createNamespace(t *testing.T, name string) {
	t.Helper()
	err := c.client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// serveCatalog runs `opm serve` on the served copy of the committed catalog and returns its address.
func serveCatalog(t *testing.T, dir string) string {
	t.Helper()
	served := filepath.Join(dir, "catalog")
	writeServedCatalog(t, filepath.Join(testenv.Root(), "catalog"), served)
	port := testenv.MustFreePort(t)
	addr := testenv.LoopbackAddr(port)
	startProcess(t, dir, "opm-serve", os.Environ(), filepath.Join(tools.opm, "opm"), "serve", served,
		"--port", fmt.Sprint(port), "--termination-log", filepath.Join(dir, "opm-termination.log"),
		"--pprof-addr", testenv.MustFreeAddr(t))
	NewWithT(t).Eventually(func() error {
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(t.Context(), "tcp", addr)
		if err == nil {
			_ = conn.Close()
		}
		return err
	}, timeout, poll).Should(Succeed(), "opm serve did not listen on %s", addr)
	return addr
}

// startProcess runs a binary until the test ends; its output goes to a file that is printed when
// the test fails.
func startProcess(t *testing.T, dir, name string, env []string, bin string, args ...string) *testenv.Process {
	t.Helper()
	p, err := testenv.StartProcess(bin, args, filepath.Join(dir, name+".log"), testenv.ProcessOptions{Env: env})
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		p.Stop(syscall.SIGINT, 10*time.Second)
		if t.Failed() || os.Getenv("OLM_TEST_LOGS") != "" {
			data, _ := os.ReadFile(p.Log)
			t.Logf("%s log (last 12 KiB):\n%s", name, tail(data, 12<<10))
		}
	})
	return p
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// loadYAML reads one object from config/olm.
func loadYAML[T any](t *testing.T, name string) *T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "olm", name))
	if err != nil {
		t.Fatal(err)
	}
	obj := new(T)
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("config/olm/%s: %v", name, err)
	}
	return obj
}

// currentBundle is bundle/, the version the catalog's channels lead to.
func currentBundle(t *testing.T) *apimanifests.Bundle {
	t.Helper()
	b, err := apimanifests.GetBundleFromDir(filepath.Join(testenv.Root(), "bundle"))
	if err != nil {
		t.Fatalf("load bundle/: %v", err)
	}
	return b
}

// manager is the operator binary started from a Deployment's pod template.
type manager struct {
	proc     *testenv.Process
	probe    string
	template corev1.PodTemplateSpec
	user     string
}

// startManager runs the manager binary as the Deployment's pod would run it: the container's
// arguments, the environment the kubelet would resolve from the pod template, and a token of the
// pod's ServiceAccount (so it has exactly the RBAC OLM created). What a pod has and this process
// has not is appended (see the package documentation).
func (c *cluster) startManager(t *testing.T, dep *appsv1.Deployment, name string) *manager {
	t.Helper()
	ctx := t.Context()
	container := olmtest.Container(t, dep)
	sa := dep.Spec.Template.Spec.ServiceAccountName
	tok, err := c.clientset.CoreV1().ServiceAccounts(dep.Namespace).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", dep.Namespace, sa, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.env.Config.Host, CertificateAuthorityData: c.env.Config.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "sa", Namespace: dep.Namespace}
	kc.CurrentContext = "sa"
	kubeconfigPath := filepath.Join(c.dir, name+".kubeconfig")
	data, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, kubeconfigPath, data)

	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + c.dir, "KUBECONFIG=" + kubeconfigPath,
		// No cluster DNS: the ControlPlanes' Controller API is unreachable on purpose.
		"CONTROLLER_ENDPOINT_TEMPLATE=127.0.0.1:1"}
	for k, v := range olmtest.ResolveEnv(t, container, dep.Spec.Template.ObjectMeta, dep.Namespace) {
		env = append(env, k+"="+v)
	}
	probe := testenv.MustFreeAddr(t)
	args := append(append([]string{}, container.Args...),
		"--health-probe-bind-address="+probe, "--metrics-bind-address=0",
		"--leader-election-namespace="+dep.Namespace, "--git-cache-dir="+filepath.Join(c.dir, name+"-git"))
	proc := startProcess(t, c.dir, name, env, tools.manager, args...)
	return &manager{proc: proc, probe: probe, template: *dep.Spec.Template.DeepCopy(),
		user: fmt.Sprintf("system:serviceaccount:%s:%s", dep.Namespace, sa)}
}

// ready reports whether the manager answers /readyz with 200.
func (m *manager) ready() error {
	return testenv.Ready(context.Background(), m.probe)
}

// stop stops the manager (a rolling update replacing the pod).
func (m *manager) stop() {
	m.proc.Stop(syscall.SIGINT, 10*time.Second)
}

// markAvailable stands in for the deployment controller, which does not run here: once the
// manager started from the Deployment's current pod template answers /readyz, it writes the status
// that controller writes for a Deployment whose replicas are all updated and available.
func (c *cluster) markAvailable(t *testing.T, key client.ObjectKey, m *manager) {
	t.Helper()
	ctx := t.Context()
	NewWithT(t).Eventually(m.ready, timeout, poll).Should(Succeed(), "the manager never answered /readyz")
	NewWithT(t).Eventually(func(g Gomega) {
		dep := &appsv1.Deployment{}
		g.Expect(c.client.Get(ctx, key, dep)).To(Succeed())
		g.Expect(dep.Spec.Template).To(Equal(m.template), "OLM changed the pod template after the manager started from it")
		replicas := int32(1)
		if dep.Spec.Replicas != nil {
			replicas = *dep.Spec.Replicas
		}
		now := metav1.Now()
		dep.Status = appsv1.DeploymentStatus{
			ObservedGeneration: dep.Generation,
			Replicas:           replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{
				{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
					Message: "Deployment has minimum availability.", LastUpdateTime: now, LastTransitionTime: now},
				{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
					Message: "ReplicaSet has successfully progressed.", LastUpdateTime: now, LastTransitionTime: now},
			},
		}
		g.Expect(c.client.Status().Update(ctx, dep)).To(Succeed())
	}, timeout, poll).Should(Succeed())
}

// auditEvents counts the audit log's requests by user in namespace.
func (c *cluster) auditEvents(t *testing.T, user, namespace string) int {
	t.Helper()
	data, err := os.ReadFile(c.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev struct {
			User      struct{ Username string }   `json:"user"`
			ObjectRef *struct{ Namespace string } `json:"objectRef"`
		}
		if err := yaml.Unmarshal(line, &ev); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if ev.User.Username == user && ev.ObjectRef != nil && ev.ObjectRef.Namespace == namespace {
			n++
		}
	}
	return n
}

func ptr[T any](v T) *T { return &v }
