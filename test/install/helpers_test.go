package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/kubeopera/kubeopera-operator/test/olm/olmtest"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

func repoPath(elem ...string) string {
	return filepath.Join(append([]string{testenv.Root()}, elem...)...)
}

// startEnv starts an API server with only the Tenant fixture CRD: the operator's CRDs come from
// the install under test.
func startEnv(t *testing.T) *testenv.Env {
	t.Helper()
	return testenv.StartForTest(t, testenv.Options{CRDDirs: []string{repoPath("test", "crds")}})
}

// adminKubeconfig writes a cluster-admin kubeconfig of env, for kubectl and Helm.
func adminKubeconfig(t *testing.T, env *testenv.Env) string {
	t.Helper()
	b, err := env.Kubeconfig("install-admin")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectl runs the project's kubectl against kubeconfig and returns its output.
func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), testenv.Kubectl(), args...)
	cmd.Env = append(testenv.Environ("KUBECONFIG"), "KUBECONFIG="+kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// decode reads every object of a multi-document YAML stream.
func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// find returns the object of kind and name among objs (nil when absent).
func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// ofKind returns the objects of kind.
func ofKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// into converts an unstructured object into a typed one.
func into(t *testing.T, u *unstructured.Unstructured, out any) {
	t.Helper()
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

var (
	managerOnce sync.Once
	managerBin  string
	managerErr  error
)

// managerBinary builds main.go once per test run.
func managerBinary(t *testing.T) string {
	t.Helper()
	managerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "install-manager-")
		if err != nil {
			managerErr = err
			return
		}
		managerBin, managerErr = testenv.BuildManager(context.Background(), dir)
	})
	if managerErr != nil {
		t.Fatal(managerErr)
	}
	return managerBin
}

// manager is the operator run as an install's Deployment would run it.
type manager struct {
	proc *testenv.Process
	// user is the ServiceAccount's user name, as the audit log records it.
	user string
}

// runManager starts the manager binary with the container arguments and environment of the
// stored Deployment, authenticated as its ServiceAccount (an envtest user of that name, so the
// API server grants it exactly the install's bindings, and in testenv.ManagerGroup, so the
// audit log keeps its requests). What differs outside a pod: the probe address, no metrics
// port, the Lease namespace a pod reads from its ServiceAccount, a Git cache of the test, and no
// Controller to reach.
func runManager(t *testing.T, env *testenv.Env, dep *appsv1.Deployment) *manager {
	t.Helper()
	g := NewWithT(t)
	var c corev1.Container
	for _, cc := range dep.Spec.Template.Spec.Containers {
		if cc.Name == olmtest.ManagerContainer {
			c = cc
		}
	}
	g.Expect(c.Name).NotTo(BeEmpty(), "Deployment %s has no manager container", dep.Name)
	g.Expect(c.Command).To(Equal([]string{"/kubeopera-operator"}))

	sa := dep.Spec.Template.Spec.ServiceAccountName
	user := fmt.Sprintf("system:serviceaccount:%s:%s", dep.Namespace, sa)
	u, err := env.AddUser(envtest.User{Name: user, Groups: []string{
		"system:serviceaccounts", "system:serviceaccounts:" + dep.Namespace, testenv.ManagerGroup,
	}}, env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := u.KubeConfig()
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "manager.kubeconfig")
	g.Expect(os.WriteFile(kubeconfigPath, kubeconfig, 0o600)).To(Succeed())

	environ := []string{"KUBECONFIG=" + kubeconfigPath, "HOME=" + dir, "CONTROLLER_ENDPOINT_TEMPLATE=127.0.0.1:1"}
	for _, e := range c.Env {
		g.Expect(e.ValueFrom).To(BeNil(), "env %s: only values are resolved here", e.Name)
		environ = append(environ, e.Name+"="+e.Value)
	}
	health := testenv.MustFreeAddr(t)
	args := append(slices.Clone(c.Args), "--health-probe-bind-address="+health, "--metrics-bind-address=0",
		"--leader-election-namespace="+dep.Namespace, "--git-cache-dir="+filepath.Join(dir, "git"))
	p, err := testenv.StartProcess(managerBinary(t), args, filepath.Join(dir, "manager.log"), testenv.ProcessOptions{Env: environ})
	g.Expect(err).NotTo(HaveOccurred())
	m := &manager{proc: p, user: user}
	t.Cleanup(func() {
		p.Stop(syscall.SIGTERM, 10*time.Second)
		if t.Failed() {
			t.Logf("manager log (%s):\n%s", dep.Name, p.TailLog(8000))
		}
	})
	g.Eventually(func(g Gomega) {
		g.Expect(p.Exited()).To(Succeed())
		code, body, err := testenv.Get(t.Context(), nil, "http://"+health+"/readyz", "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK), string(body))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	return m
}

// stop stops the manager and checks, in the audit log, that it made requests and that the
// install's RBAC refused none of them.
func (m *manager) stop(t *testing.T, env *testenv.Env) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(m.proc.Exited()).To(Succeed())
	m.proc.Stop(syscall.SIGTERM, 10*time.Second)
	g.Expect(m.proc.Err()).To(Succeed(), "the manager stops cleanly on SIGTERM")
	reqs, err := env.ManagerRequests()
	g.Expect(err).NotTo(HaveOccurred())
	var mine []testenv.Request
	for _, r := range reqs {
		if r.User == m.user {
			mine = append(mine, r)
		}
	}
	g.Expect(len(mine)).To(BeNumerically(">", 10), "the manager made requests as %s", m.user)
	g.Expect(testenv.Refused(mine)).To(BeEmpty(), "requests the install's RBAC refused")
}

// samples are config/samples, as objects.
func samples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range []string{"datasance_v3_controlplane.yaml", "kubeopera_v1alpha1_kubeoperaapp.yaml"} {
		b, err := os.ReadFile(repoPath("config", "samples", f))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, decode(t, b)...)
	}
	return out
}

// createSamples creates a namespace with the samples in it (and the Secret the ControlPlane's
// bootstrap password names) and returns them as created.
func createSamples(t *testing.T, c client.Client, ns string) []*unstructured.Unstructured {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	objs := samples(t)
	for _, o := range objs {
		o.SetNamespace(ns)
		ref, _, _ := unstructured.NestedStringMap(o.Object, "spec", "auth", "bootstrap", "passwordSecretRef")
		if ref["name"] != "" {
			g.Expect(c.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: ref["name"], Namespace: ns},
				StringData: map[string]string{ref["key"]: "example-password"},
			})).To(Succeed())
		}
		g.Expect(c.Create(ctx, o)).To(Succeed(), "sample %s %s", o.GetKind(), o.GetName())
	}
	return objs
}

// waitReconciled waits until the manager reconciled every sample (a status condition, the app's
// finalizer) and the ControlPlane's first operands exist.
func waitReconciled(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	for _, o := range objs {
		g.Eventually(func(g Gomega) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(o), got)).To(Succeed())
			g.Expect(olmtest.Reconciled(got)).To(BeTrue(), "%s %s/%s not reconciled", o.GetKind(), o.GetNamespace(), o.GetName())
			if o.GetKind() == "ControlPlane" {
				g.Expect(olmtest.CountOwned(t.Context(), c, o.GetNamespace(), got.GetUID())).To(BeNumerically(">", 0),
					"nothing owned by ControlPlane %s/%s", o.GetNamespace(), o.GetName())
			}
		}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	}
}

// expectUntouched checks that objs are as created: never reconciled, nothing owned.
func expectUntouched(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(o), got)).To(Succeed())
		g.Expect(got.GetResourceVersion()).To(Equal(o.GetResourceVersion()), "%s %s/%s was modified", o.GetKind(), o.GetNamespace(), o.GetName())
		g.Expect(olmtest.CountOwned(t.Context(), c, o.GetNamespace(), got.GetUID())).To(BeZero())
	}
}

// expectStillThere checks that the CRDs and the samples survived an uninstall.
func expectStillThere(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	for _, crd := range []string{"controlplanes.datasance.com", "kubeoperaapps.kubeopera.io"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apiextensions.k8s.io/v1")
		u.SetKind("CustomResourceDefinition")
		g.Expect(c.Get(t.Context(), client.ObjectKey{Name: crd}, u)).To(Succeed(), "CRD %s was removed", crd)
		g.Expect(u.GetDeletionTimestamp()).To(BeNil(), "CRD %s is being deleted", crd)
	}
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		g.Expect(c.Get(t.Context(), client.ObjectKeyFromObject(o), got)).To(Succeed(), "%s %s/%s was removed", o.GetKind(), o.GetNamespace(), o.GetName())
		g.Expect(got.GetDeletionTimestamp()).To(BeNil())
	}
}

// storedDeployment reads a Deployment back from the API server.
func storedDeployment(t *testing.T, c client.Client, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatalf("Deployment %s/%s: %v", ns, name, err)
	}
	return d
}
