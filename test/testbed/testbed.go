package testbed

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// stages are kwok's pod and node lifecycles (stages.yaml): nodes that turn Ready and heartbeat,
// pods that go Running and Ready, and the failures FailAnnotation selects.
//
//go:embed stages.yaml
var stages []byte

// FailAnnotation on a pod (through its template) makes kwok play a failure instead of a healthy
// start; its values are the Fail* constants. FailImage selects the same failures by the image of
// the pod's first container, for pods whose annotations a test does not write.
const FailAnnotation = "testbed.kubeopera.io/fail"

// CrashPod makes a running pod crash as a kubelet reports it: FailAnnotation set to FailCrashLoop
// on a Running and Ready pod makes kwok kill its containers and back off restarting them, the
// restart count rising (the pod's workload is not changed, as when a process dies by itself).
func (c *Cluster) CrashPod(ctx context.Context, pod *corev1.Pod) error {
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[FailAnnotation] = FailCrashLoop
	return c.Client.Patch(ctx, pod, patch)
}

// FailImage is an image whose pods fail as mode (a Fail* constant) says.
func FailImage(mode string) string { return "testbed.invalid/fail:" + mode }

// The failures kwok plays, as a kubelet reports them.
const (
	// FailImagePull: the containers wait with ErrImagePull, then ImagePullBackOff; the pod stays
	// Pending.
	FailImagePull = "ImagePullBackOff"
	// FailCrashLoop: the pod runs, its containers wait in CrashLoopBackOff with a restart count
	// that keeps rising.
	FailCrashLoop = "CrashLoopBackOff"
	// FailNotReady: the containers run but never pass their readiness probe.
	FailNotReady = "NotReady"
)

// NodeAnnotation marks the nodes kwok plays.
const NodeAnnotation = "kwok.x-k8s.io/node"

// StorageClass is the default StorageClass; its claims are bound by the test bed's provisioner.
const StorageClass = "testbed-local"

// Provisioner is StorageClass's provisioner name.
const Provisioner = "testbed.kubeopera.io/local"

// ZoneLabel is the well-known zone label every node carries.
const ZoneLabel = "topology.kubernetes.io/zone"

// controllers are the kube-controller-manager controllers the test bed runs: what creates and
// removes pods for workloads, collects garbage, empties deleted namespaces, evaluates
// PodDisruptionBudgets and ResourceQuotas, binds claims and protects them while in use, the
// ServiceAccount machinery, and the node lifecycle (it lifts the not-ready taint the API server
// puts on every new node once kwok reports the node Ready).
var controllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller",
	"garbage-collector-controller", "namespace-controller", "disruption-controller",
	"resourcequota-controller", "endpointslice-controller", "serviceaccount-controller",
	"serviceaccount-token-controller", "root-ca-certificate-publisher-controller",
	"persistentvolume-binder-controller", "persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller", "pod-garbage-collector-controller",
	"node-lifecycle-controller",
}

// ErrNoBinaries means the cluster's binaries are not built.
var ErrNoBinaries = errors.New("the test bed's binaries are missing: run `make test-e2e` (or `hack/tool.sh cluster && hack/tool.sh kwok`)")

// Options configure a cluster.
type Options struct {
	// API configures the API server as testenv.Start does (CRDs, flags).
	API testenv.Options
	// Nodes is the number of simulated nodes (default 3); node i is in zone zone-<i mod Zones>.
	Nodes int
	// Zones is the number of zones the nodes are spread over (default 3).
	Zones int
	// NodeCPU and NodeMemory are each node's capacity (default 8 CPUs and 32Gi).
	NodeCPU, NodeMemory string
	// OpenShift admits pods as OpenShift does with the SCCs it ships: every namespace gets its
	// SCC ranges (the allocation controller's annotations); every pod is defaulted and checked
	// against the restricted-v2 SecurityContextConstraints, which every user may use, then
	// against nonroot-v2 when its creator or its ServiceAccount may use that (a RoleBinding to
	// ClusterRole system:openshift:scc:nonroot-v2), and is annotated openshift.io/scc with the
	// SCC that admitted it (scc.go, webhook.go). The API serves SecurityContextConstraints and
	// holds the ClusterRoles and the binding OpenShift installs for these two SCCs (openshift.go).
	OpenShift bool
	// Dir receives the components' logs and files; empty: a new temporary directory, removed by
	// Stop.
	Dir string
}

// Cluster is a running test-bed cluster: the API server with a client (testenv.Env), and the
// processes and in-process stand-ins around it.
type Cluster struct {
	*testenv.Env
	// Dir holds the logs (kube-controller-manager.log, kube-scheduler.log, kwok.log) and the
	// admin kubeconfig.
	Dir string
	// KubeconfigFile is a kubeconfig file of a cluster-admin user.
	KubeconfigFile string
	// Nodes are the names of the simulated nodes.
	Nodes []string

	procs   []*testenv.Process
	cancel  context.CancelFunc
	mgrDone chan error
	// ownDir: Dir is a temporary directory of the cluster's own, removed by Stop.
	ownDir bool
}

// Start starts a cluster and returns once its nodes are Ready and the controller manager runs.
func Start(ctx context.Context, opts Options) (_ *Cluster, retErr error) {
	bins, err := binaries()
	if err != nil {
		return nil, err
	}
	opts.Nodes, opts.Zones = cmp.Or(opts.Nodes, 3), cmp.Or(opts.Zones, 3)
	opts.NodeCPU, opts.NodeMemory = cmp.Or(opts.NodeCPU, "8"), cmp.Or(opts.NodeMemory, "32Gi")
	dir := opts.Dir
	if dir == "" {
		dir, err = os.MkdirTemp("", "testbed-")
	} else {
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return nil, err
	}
	env, err := testenv.Start(opts.API)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: env, Dir: dir, ownDir: opts.Dir == ""}
	defer func() {
		if retErr != nil {
			_ = c.Stop()
		}
	}()
	if err := c.writeFiles(); err != nil {
		return nil, err
	}
	if err := c.createStorageClass(ctx); err != nil {
		return nil, err
	}
	if err := c.startStandIns(ctx, opts.OpenShift); err != nil {
		return nil, err
	}
	if err := c.createNodes(ctx, opts); err != nil {
		return nil, err
	}
	if err := c.startProcesses(bins); err != nil {
		return nil, err
	}
	if err := c.waitRunning(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// binDirs are where the binaries are: CLUSTER_BIN_DIR and KWOK_BIN_DIR (set by the Makefile), else
// the tool cache of hack/tool.sh.
type binDirs struct{ cluster, kwok string }

func binaries() (binDirs, error) {
	b := binDirs{
		cluster: cmp.Or(os.Getenv("CLUSTER_BIN_DIR"), testenv.ToolDir("cluster")),
		kwok:    cmp.Or(os.Getenv("KWOK_BIN_DIR"), testenv.ToolDir("kwok")),
	}
	for _, p := range []string{
		filepath.Join(b.cluster, "kube-controller-manager"), filepath.Join(b.cluster, "kube-scheduler"), filepath.Join(b.kwok, "kwok"),
	} {
		if _, err := os.Stat(p); err != nil {
			return b, fmt.Errorf("%w: %w", ErrNoBinaries, err)
		}
	}
	return b, nil
}

func (c *Cluster) writeFiles() error {
	kc, err := c.Kubeconfig("testbed-admin")
	if err != nil {
		return err
	}
	c.KubeconfigFile = filepath.Join(c.Dir, "admin.kubeconfig")
	return errors.Join(
		os.WriteFile(c.KubeconfigFile, kc, 0o600),
		os.WriteFile(filepath.Join(c.Dir, "ca.crt"), c.Config.CAData, 0o600),
		os.WriteFile(filepath.Join(c.Dir, "stages.yaml"), stages, 0o600),
	)
}

// createStorageClass creates the default StorageClass, whose claims bind at once.
func (c *Cluster) createStorageClass(ctx context.Context) error {
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:       Provisioner,
		ReclaimPolicy:     new(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode: new(storagev1.VolumeBindingImmediate),
	}
	return c.Client.Create(ctx, sc)
}

// createNodes creates the nodes kwok plays, with the labels and addresses a kubelet registers.
func (c *Cluster) createNodes(ctx context.Context, opts Options) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(opts.NodeCPU),
		corev1.ResourceMemory: resource.MustParse(opts.NodeMemory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	for i := range opts.Nodes {
		name := "testbed-node-" + strconv.Itoa(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{NodeAnnotation: "fake"},
				Labels: map[string]string{
					"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
					ZoneLabel: "zone-" + strconv.Itoa(i%opts.Zones),
				},
			},
			Status: corev1.NodeStatus{
				Capacity: capacity, Allocatable: capacity,
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.99.0.%d", i+1)}},
			},
		}
		if err := c.Client.Create(ctx, node); err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		c.Nodes = append(c.Nodes, name)
	}
	return nil
}

// startStandIns runs the in-process parts: the claim provisioner, and on OpenShift the SCC API
// and RBAC, the SCC range allocation and the SCC admission webhook.
func (c *Cluster) startStandIns(ctx context.Context, openShift bool) error {
	mgr, err := ctrl.NewManager(c.Config, manager.Options{
		Scheme:                 testenv.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log.Log.WithName("testbed"),
		// A process may run several (a test of its own per cluster).
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return err
	}
	if err := setupProvisioner(mgr); err != nil {
		return err
	}
	var hook *sccWebhook
	if openShift {
		if err := installOpenShiftAPI(ctx, c.Client); err != nil {
			return err
		}
		if err := setupRangeAllocator(mgr); err != nil {
			return err
		}
		if hook, err = newSCCWebhook(c.Dir, mgr.GetAPIReader(), mgr.GetClient()); err != nil {
			return err
		}
		if err := mgr.Add(hook.server); err != nil {
			return err
		}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel, c.mgrDone = cancel, make(chan error, 1)
	go func() { c.mgrDone <- mgr.Start(runCtx) }()
	if hook == nil {
		return nil
	}
	// Register the webhook once it serves, so no pod creation meets a closed port.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return hook.server.StartedChecker()(nil) == nil, nil
	}); err != nil {
		return fmt.Errorf("the SCC webhook did not start: %w", err)
	}
	return c.Client.Create(ctx, hook.configuration())
}

// startProcesses starts the controller manager, the scheduler and kwok, each with its log in Dir.
//
// Each controller of the controller manager acts as its own ServiceAccount in kube-system
// (replicaset-controller, statefulset-controller, ...) with the roles the API server bootstraps
// for it, as OpenShift runs them (openshift/cluster-kube-controller-manager-operator,
// bindata/assets/config/defaultconfig.yaml, use-service-account-credentials) and kubeadm does:
// the SCC admission asks what the creator of a pod may use, and a controller manager acting as
// the cluster admin may use every SCC.
func (c *Cluster) startProcesses(b binDirs) error {
	common := []string{"--kubeconfig=" + c.KubeconfigFile}
	apiServer := c.Env.Env.ControlPlane.GetAPIServer()
	specs := []struct {
		bin  string
		args []string
		env  []string
	}{
		{filepath.Join(b.cluster, "kube-controller-manager"), append([]string{
			"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=true",
			"--controllers=" + strings.Join(controllers, ","),
			"--service-account-private-key-file=" + filepath.Join(apiServer.CertDir, "sa-signer.key"),
			"--root-ca-file=" + filepath.Join(c.Dir, "ca.crt"),
			"--cluster-name=testbed", "--kube-api-qps=100", "--kube-api-burst=200",
		}, common...), nil},
		{filepath.Join(b.cluster, "kube-scheduler"), append([]string{
			"--leader-elect=false", "--secure-port=0", "--kube-api-qps=100", "--kube-api-burst=200",
		}, common...), nil},
		// kwok opens no port unless asked; KWOK_WORKDIR keeps it from reading ~/.kwok.
		{filepath.Join(b.kwok, "kwok"), append([]string{
			"--config=" + filepath.Join(c.Dir, "stages.yaml"),
			"--manage-nodes-with-annotation-selector=" + NodeAnnotation + "=fake",
			"--cidr=10.244.0.0/16",
		}, common...), []string{"KWOK_WORKDIR=" + filepath.Join(c.Dir, "kwok")}},
	}
	for _, s := range specs {
		p, err := testenv.StartProcess(s.bin, s.args, filepath.Join(c.Dir, filepath.Base(s.bin)+".log"), testenv.ProcessOptions{
			Env: append(testenv.Environ("KUBECONFIG"), s.env...),
		})
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
	}
	return nil
}

// waitRunning waits until every node is Ready (kwok plays them) and schedulable, and the
// controller manager has created the default ServiceAccount (its controllers run).
func (c *Cluster) waitRunning(ctx context.Context) error {
	var why string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		why = c.notRunning(ctx)
		return why == "", nil
	})
	if err != nil {
		return fmt.Errorf("the test bed did not come up (%s; logs in %s): %w", why, c.Dir, err)
	}
	return nil
}

// notRunning says what the cluster still lacks ("" when nothing).
func (c *Cluster) notRunning(ctx context.Context) string {
	nodes := &corev1.NodeList{}
	if err := c.Client.List(ctx, nodes); err != nil {
		return err.Error()
	}
	for _, n := range nodes.Items {
		if !NodeReady(&n) {
			return "node " + n.Name + " is not Ready"
		}
		// The API server taints every new node not-ready; the node lifecycle controller lifts the
		// taint once the node is Ready.
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady {
				return "node " + n.Name + " is still tainted " + t.Key
			}
		}
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{}); err != nil {
		return "no default ServiceAccount yet: " + err.Error()
	}
	return ""
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Exited reports a component process that ended while the cluster runs.
func (c *Cluster) Exited() error {
	var errs []error
	for _, p := range c.procs {
		errs = append(errs, p.Exited())
	}
	return errors.Join(errs...)
}

// Stop stops kwok, the scheduler and the controller manager, the in-process stand-ins, and then
// the API server.
func (c *Cluster) Stop() error {
	if c == nil {
		return nil
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop(syscall.SIGTERM, 5*time.Second)
	}
	c.procs = nil
	var errs []error
	if c.cancel != nil {
		c.cancel()
		if err := <-c.mgrDone; err != nil {
			errs = append(errs, err)
		}
		c.cancel = nil
	}
	if c.Env != nil {
		errs = append(errs, c.Env.Stop())
	}
	if c.ownDir {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// StartForTest starts a cluster for one test (logs in a directory of the test) and stops it when
// the test ends. Missing binaries fail the test (skip it under -short).
func StartForTest(ctx context.Context, t testenv.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(ctx, opts)
	if err != nil {
		if (errors.Is(err, ErrNoBinaries) || errors.Is(err, testenv.ErrNoAssets)) && testenv.MaySkipMissingTools() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	return c
}
