package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/sandbox"
	"github.com/kubeopera/kubeopera-operator/test/testbed"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// cpEnv is a ControlPlane of the sample on a cluster of the test bed, with the operator's binary
// (ControlPlane reconciler only, the bundle's RBAC) and a Controller double. Load balancer and
// Ingress addresses come from the sandbox's local cloud; pods are the real controllers' and
// kwok's.
type cpEnv struct {
	host *testbed.Cluster
	fake *fake.Server
	cp   *datasancev3.ControlPlane
}

// e2eGracePeriod is how long a ready ControlPlane whose components wait or fail keeps ready.
const e2eGracePeriod = 5 * time.Second

// startControlPlane starts the cluster and the operator and creates the sample ControlPlane
// (changed by mods) in namespace pot; prepare, when not nil, runs once the namespace and the
// credential Secrets exist, before the ControlPlane is created.
func startControlPlane(t *testing.T, g Gomega, opts testbed.Options, prepare func(c client.Client, ns string), mods ...testfixture.Mod) *cpEnv {
	t.Helper()
	ctx := context.Background()
	host := testbed.StartForTest(ctx, t, opts)
	cloud, err := sandbox.StartLocalCloud("host", host.Config, logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cloud.Stop() })

	cp, err := testfixture.Sample(append([]testfixture.Mod{testfixture.InNamespace("pot")}, mods...)...)
	g.Expect(err).NotTo(HaveOccurred())
	const password = "e2e-bootstrap"
	f := fake.NewServer(fake.WithCredentials(cp.Spec.Auth.Bootstrap.Username, password),
		fake.WithSecretReader(fake.KubernetesSecrets(host.Client, cp.Namespace)))
	t.Cleanup(f.Close)
	g.Expect(host.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cp.Namespace}})).To(Succeed())
	for _, s := range testfixture.CredentialSecrets(cp, password) {
		g.Expect(host.Client.Create(ctx, s)).To(Succeed())
	}
	if prepare != nil {
		prepare(host.Client, cp.Namespace)
	}

	// The operator's binary as it ships (make test-e2e: built once, with the race detector), as
	// the bundle's ServiceAccount would run it, the ControlPlane reconciler only.
	bin, err := testenv.BuildManager(ctx, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, managerKubeconfig(t, g, host), 0o600)).To(Succeed())
	logPath := filepath.Join(t.TempDir(), "manager.log")
	m, err := testenv.StartProcess(bin, []string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--enable-app-controller=false",
		"--controller-endpoint-template=" + strings.TrimPrefix(f.URL(), "http://"),
		"--controlplane-ready-grace-period=" + e2eGracePeriod.String(),
	}, logPath, testenv.ProcessOptions{Env: append(testenv.Environ("KUBECONFIG", "WATCH_NAMESPACE", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"), "KUBECONFIG="+kubeconfig)})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		g.Expect(m.Exited()).To(Succeed())
		m.Stop(syscall.SIGTERM, 10*time.Second)
		if report := testenv.RaceReport(logPath); report != "" {
			t.Errorf("the manager's race detector reported:\n%s", report)
		}
		if t.Failed() {
			t.Logf("manager log (tail):\n%s", m.TailLog(8<<10))
		}
	})
	g.Expect(host.Client.Create(ctx, cp)).To(Succeed())
	return &cpEnv{host: host, fake: f, cp: cp}
}

// state is the ControlPlane's True condition.
func (e *cpEnv) state(g Gomega) metav1.Condition {
	cp := &datasancev3.ControlPlane{}
	g.Expect(e.host.Client.Get(context.Background(), client.ObjectKeyFromObject(e.cp), cp)).To(Succeed())
	for _, c := range cp.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return metav1.Condition{}
}

// componentPods are the running pods of a component (app.kubernetes.io/component).
func (e *cpEnv) componentPods(g Gomega, component string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(e.host.Client.List(context.Background(), list, client.InNamespace(e.cp.Namespace),
		client.MatchingLabels{"app.kubernetes.io/component": component})).To(Succeed())
	return list.Items
}

// TestControlPlaneReadyMeansRunningPods: on a cluster whose pods live and are admitted as
// OpenShift admits them by default (restricted-v2, SCC bindings as OpenShift ships them), the
// sample ControlPlane is ready only once its Controller, router and NATS pods run and are ready;
// the router runs under restricted-v2 with a UID of the namespace's range, the Controller and
// NATS under nonroot-v2 as their images' user 10000 (docs/controlplane.md#pod-identity-and-openshift);
// a router that starts
// crash-looping takes it out of ready (after the grace period) with a reason and message that name
// the pod and what it reports; a new router pod makes it ready again.
func TestControlPlaneReadyMeansRunningPods(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	// The namespace's quota counts every compute resource, as a platform's tenant namespaces do:
	// it admits only pods whose containers all have CPU and memory requests and limits.
	compute := corev1.ResourceList{
		corev1.ResourceRequestsCPU: resource.MustParse("100"), corev1.ResourceRequestsMemory: resource.MustParse("100Gi"),
		corev1.ResourceLimitsCPU: resource.MustParse("100"), corev1.ResourceLimitsMemory: resource.MustParse("100Gi"),
	}
	e := startControlPlane(t, g, testbed.Options{OpenShift: true}, quotaCounted(g, "compute", compute))

	g.Eventually(func(g Gomega) {
		c := e.state(g)
		g.Expect(c.Type).To(Equal(datasancev3.ConditionReady), "%s: %s", c.Reason, c.Message)
	}).Should(Succeed())
	// Every component's pods run: what made it ready; each was admitted by the SCC it needs and
	// by the quota, none is BestEffort.
	ns := &corev1.Namespace{}
	g.Expect(e.host.Client.Get(ctx, client.ObjectKey{Name: e.cp.Namespace}, ns)).To(Succeed())
	uidRange := ns.Annotations[testbed.AnnotationUIDRange]
	g.Expect(uidRange).NotTo(BeEmpty())
	first, err := strconv.ParseInt(strings.Split(uidRange, "/")[0], 10, 64)
	g.Expect(err).NotTo(HaveOccurred())
	for component, scc := range map[string]string{"controller": "nonroot-v2", "router": "restricted-v2", "nats": "nonroot-v2"} {
		pods := e.componentPods(g, component)
		g.Expect(pods).NotTo(BeEmpty(), component)
		for _, p := range pods {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), p.Name)
			g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), p.Name)
			g.Expect(p.Annotations).To(HaveKeyWithValue(testbed.AnnotationValidatedSCC, scc), p.Name)
			g.Expect(p.Status.QOSClass).To(Equal(corev1.PodQOSBurstable), p.Name)
			uid := p.Spec.Containers[0].SecurityContext.RunAsUser
			if uid == nil {
				uid = p.Spec.SecurityContext.RunAsUser
			}
			g.Expect(uid).NotTo(BeNil(), p.Name)
			if scc == "restricted-v2" {
				g.Expect(*uid).To(Equal(first), "%s runs as the namespace's first UID", p.Name)
			} else {
				g.Expect(*uid).To(Equal(int64(10000)), "%s runs as its image's user", p.Name)
			}
		}
	}

	// The router's process dies and keeps dying: the kubelet reports CrashLoopBackOff.
	router := e.componentPods(g, "router")
	g.Expect(router).To(HaveLen(1))
	g.Expect(e.host.CrashPod(ctx, &router[0])).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := e.state(g)
		g.Expect(c.Type).To(Equal(datasancev3.ConditionReady))
		g.Expect(c.Reason).To(Equal(datasancev3.ReasonWorkloadUnavailable))
		g.Expect(c.Message).To(ContainSubstring("Router is not available"))
		g.Expect(c.Message).To(ContainSubstring("pod " + router[0].Name + ": container router is waiting: CrashLoopBackOff"))
	}).Should(Succeed(), "a ready ControlPlane says at once what fails")
	g.Eventually(func(g Gomega) {
		c := e.state(g)
		g.Expect(c.Type).To(Equal(datasancev3.ConditionDeploying), "past the grace period it is no longer ready")
		g.Expect(c.Reason).To(Equal(datasancev3.ReasonWorkloadUnavailable))
	}).Should(Succeed())

	// The crashing pod is replaced (deleted; its ReplicaSet makes a new one that runs): ready again.
	g.Expect(e.host.Client.Delete(ctx, &router[0])).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := e.state(g)
		g.Expect(c.Type).To(Equal(datasancev3.ConditionReady), "%s: %s", c.Reason, c.Message)
		g.Expect(c.Reason).To(Equal(datasancev3.ReasonReconciled))
	}).Should(Succeed())
}

// TestControlPlaneRefusedPodsReachTheStatus: a namespace whose ResourceQuota has room for less
// CPU than the operands request refuses the pods that exceed it; the ControlPlane never becomes
// ready and its condition says which workload cannot create pods and the quota's words.
func TestControlPlaneRefusedPodsReachTheStatus(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	// The Controller requests 100m and the router 50m by default: either fits, not both.
	tight := corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("120m")}
	e := startControlPlane(t, g, testbed.Options{}, quotaCounted(g, "tight", tight), func(cp *datasancev3.ControlPlane) {
		cp.Spec.Nats.Enabled = ptr.To(false)
	})
	g.Eventually(func(g Gomega) {
		c := e.state(g)
		g.Expect(c.Type).To(Equal(datasancev3.ConditionDeploying))
		g.Expect(c.Reason).To(Equal(datasancev3.ReasonWorkloadUnavailable))
		g.Expect(c.Message).To(ContainSubstring("pods cannot be created"))
		g.Expect(c.Message).To(ContainSubstring("exceeded quota: tight"))
	}).Should(Succeed())
	cp := &datasancev3.ControlPlane{}
	g.Expect(e.host.Client.Get(ctx, client.ObjectKeyFromObject(e.cp), cp)).To(Succeed())
	g.Expect(apimeta.IsStatusConditionTrue(cp.Status.Conditions, datasancev3.ConditionReady)).To(BeFalse())
	available := int32(0)
	for _, name := range []string{"controller", "router"} {
		d := &appsv1.Deployment{}
		g.Expect(e.host.Client.Get(ctx, client.ObjectKey{Namespace: e.cp.Namespace, Name: name}, d)).To(Succeed())
		available += d.Status.AvailableReplicas
	}
	g.Expect(available).To(BeNumerically("<=", 1), "the quota has room for one of the two pods")
}

// quotaCounted is a startControlPlane prepare step: ResourceQuota name with hard limits, counted
// by its controller before the ControlPlane exists, so no pod is ever admitted past it.
func quotaCounted(g Gomega, name string, hard corev1.ResourceList) func(c client.Client, ns string) {
	return func(c client.Client, ns string) {
		ctx := context.Background()
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ResourceQuotaSpec{Hard: hard},
		}
		g.Expect(c.Create(ctx, quota)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
			g.Expect(quota.Status.Hard).NotTo(BeEmpty())
		}).Should(Succeed())
	}
}

// managerKubeconfig is a kubeconfig of a user holding exactly the bundle's RBAC (AllNamespaces).
func managerKubeconfig(t *testing.T, g Gomega, host *testbed.Cluster) []byte {
	t.Helper()
	kc, err := testenv.KubeconfigFor(host.MustManagerConfig(t, "e2e-controlplane"))
	g.Expect(err).NotTo(HaveOccurred())
	return kc
}

// TestControlPlaneDeletionKeepsTheData: deleting a running ControlPlane (SQLite database, NATS with
// JetStream) lets the real garbage collector remove everything it owns — workloads, their pods,
// Services, RBAC, the server certificates — while the data stores and the keys that read them stay,
// bound: the SQLite and JetStream claims, the four CA Secrets, the JetStream key and the NATS JWT
// bundle (docs/controlplane.md#data-on-deletion). Observed on the cluster, not read from owner
// references.
func TestControlPlaneDeletionKeepsTheData(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx := context.Background()
	e := startControlPlane(t, g, testbed.Options{}, nil, testfixture.WithSQLite(), func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 1 })
	g.Eventually(func(g Gomega) {
		c := e.state(g)
		g.Expect(c.Type).To(Equal(datasancev3.ConditionReady), "%s: %s", c.Reason, c.Message)
	}).Should(Succeed())
	ns := e.cp.Namespace
	kept := []client.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "controller-sqlite"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "js-data-nats-0"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "js-data-nats-1"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "js-data-nats-2"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "router-site-ca"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "default-router-local-ca"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nats-site-ca"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "default-nats-local-ca"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "nats-jetstream-key-" + e.cp.Name}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "iofog-nats-jwt-bundle"}},
	}
	uids := map[string]types.UID{}
	for _, o := range kept {
		g.Expect(e.host.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, o)).To(Succeed(), o.GetName())
		uids[o.GetName()] = o.GetUID()
	}
	owned := map[string]client.Object{
		"Deployment controller":       &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "controller"}},
		"Deployment router":           &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "router"}},
		"StatefulSet nats":            &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "nats"}},
		"Service controller":          &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "controller"}},
		"Secret router-site-server":   &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "router-site-server"}},
		"ConfigMap iofog-nats-config": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "iofog-nats-config"}},
		"ServiceAccount router":       &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "router"}},
	}
	for what, o := range owned {
		g.Expect(e.host.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, o)).To(Succeed(), what)
	}

	g.Expect(e.host.Client.Delete(ctx, e.cp)).To(Succeed())
	g.Eventually(func(g Gomega) {
		for what, o := range owned {
			err := e.host.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, o)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s not collected: %v", what, err)
		}
		pods := &corev1.PodList{}
		g.Expect(e.host.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty(), "the operands' pods are gone")
	}).Should(Succeed(), "the garbage collector removes what the ControlPlane owned")
	for _, o := range kept {
		g.Expect(e.host.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: o.GetName()}, o)).To(Succeed(), "%s was collected", o.GetName())
		g.Expect(o.GetUID()).To(Equal(uids[o.GetName()]), "%s was replaced", o.GetName())
		g.Expect(o.GetDeletionTimestamp()).To(BeNil(), "%s is being deleted", o.GetName())
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound), "%s keeps its volume", pvc.Name)
		}
	}
}

// readyWatch follows the NATS pods of a namespace through a watch and records the fewest that
// were running and ready at once since track was called: a pod counts while it is Running, its
// Ready condition is True and it is not being deleted (what a PodDisruptionBudget counts as
// healthy). Every event is counted in the order the API server sent it, so a dip lasting a single
// event is seen.
type readyWatch struct {
	mu       sync.Mutex
	ready    map[types.UID]bool
	tracking bool
	min      int
}

func (w *readyWatch) count() int {
	n := 0
	for _, r := range w.ready {
		if r {
			n++
		}
	}
	return n
}

func (w *readyWatch) set(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if deleted {
		delete(w.ready, p.UID)
	} else {
		w.ready[p.UID] = p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p)
	}
	if n := w.count(); w.tracking && n < w.min {
		w.min = n
	}
}

// track starts recording the minimum from the current count; a later call changes nothing.
func (w *readyWatch) track() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.tracking {
		w.tracking, w.min = true, w.count()
	}
}

// minimum is the fewest ready pods seen since track.
func (w *readyWatch) minimum() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.min
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// watchReadyPods starts a readyWatch over the pods of ns matching selector; it stops with ctx.
func watchReadyPods(ctx context.Context, g Gomega, cs kubernetes.Interface, ns, selector string) *readyWatch {
	w := &readyWatch{ready: map[types.UID]bool{}}
	informer := cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(cs.CoreV1().RESTClient(), "pods", ns,
		func(o *metav1.ListOptions) { o.LabelSelector = selector }), &corev1.Pod{}, 0, cache.Indexers{})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.set(obj, false) },
		UpdateFunc: func(_, obj any) { w.set(obj, false) },
		DeleteFunc: func(obj any) { w.set(obj, true) },
	})
	g.Expect(err).NotTo(HaveOccurred())
	go informer.RunWithContext(ctx)
	g.Expect(cache.WaitForCacheSync(ctx.Done(), informer.HasSynced)).To(BeTrue())
	return w
}

// TestDrainKeepsTheNatsQuorum: the sample ControlPlane with replicas.nats omitted runs three NATS
// servers, one per node (the hard hostname spread). Every node is then drained in turn as
// `kubectl drain` does: cordoned, its NATS pods evicted through the eviction API, each eviction
// retried while the PodDisruptionBudget refuses it (429), then uncordoned once the evicted pods
// are gone. The budget keeps two of the three servers — the JetStream meta group's quorum —
// running and ready throughout, so at least one eviction has to wait; every server is evicted at
// least once (a pod that moved off a node is evicted again from the node it moved to), and the
// ControlPlane ends ready with three ready servers.
func TestDrainKeepsTheNatsQuorum(t *testing.T) {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(2 * time.Minute)
	g.SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := startControlPlane(t, g, testbed.Options{}, nil, func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = nil })
	ns := e.cp.Namespace
	c := e.host.Client
	g.Eventually(func(g Gomega) {
		s := e.state(g)
		g.Expect(s.Type).To(Equal(datasancev3.ConditionReady), "%s: %s", s.Reason, s.Message)
	}).Should(Succeed())

	// Three servers, one per node, and a budget the disruption controller has evaluated: one of
	// the three may go.
	const servers = 3
	natsPods := func(g Gomega) []corev1.Pod { return e.componentPods(g, "nats") }
	g.Eventually(func(g Gomega) {
		nodes := map[string]string{}
		pods := natsPods(g)
		g.Expect(pods).To(HaveLen(servers))
		for _, p := range pods {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), p.Name)
			g.Expect(podReady(&p)).To(BeTrue(), p.Name)
			g.Expect(nodes).NotTo(HaveKey(p.Spec.NodeName), "%s and %s on one node", p.Name, nodes[p.Spec.NodeName])
			nodes[p.Spec.NodeName] = p.Name
		}
	}).Should(Succeed())
	pdb := &policyv1.PodDisruptionBudget{}
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nats"}, pdb)).To(Succeed())
		g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
		g.Expect(pdb.Status.CurrentHealthy).To(Equal(int32(servers)))
		g.Expect(pdb.Status.DisruptionsAllowed).To(Equal(int32(1)))
	}).Should(Succeed())
	g.Expect(pdb.Spec.MinAvailable).To(HaveValue(Equal(intstr.FromInt32(2))))
	g.Expect(pdb.Spec.MaxUnavailable).To(BeNil())

	cs, err := kubernetes.NewForConfig(e.host.Config)
	g.Expect(err).NotTo(HaveOccurred())
	watch := watchReadyPods(ctx, g, cs, ns, "app.kubernetes.io/component=nats")
	setUnschedulable := func(node string, unschedulable bool) {
		n := &corev1.Node{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: node}, n)).To(Succeed())
		patch := client.MergeFrom(n.DeepCopy())
		n.Spec.Unschedulable = unschedulable
		g.Expect(c.Patch(ctx, n, patch)).To(Succeed())
	}

	evicted := map[string]int{}
	refused := 0
	for _, node := range e.host.Nodes {
		setUnschedulable(node, true)
		var gone []types.UID
		for _, p := range natsPods(g) {
			if p.Spec.NodeName != node || p.DeletionTimestamp != nil {
				continue
			}
			watch.track() // from the first eviction on
			eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name},
				DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}}
			err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				err := cs.CoreV1().Pods(ns).EvictV1(ctx, eviction)
				if apierrors.IsTooManyRequests(err) {
					refused++
					return false, nil
				}
				return err == nil, err
			})
			g.Expect(err).NotTo(HaveOccurred(), "evict %s from %s (%d refusals so far)", p.Name, node, refused)
			evicted[p.Name]++
			gone = append(gone, p.UID)
		}
		// As kubectl drain does, wait until the evicted pods are gone before the node is done.
		g.Eventually(func(g Gomega) {
			for _, p := range natsPods(g) {
				g.Expect(gone).NotTo(ContainElement(p.UID), "pod %s still on %s", p.Name, node)
			}
		}).Should(Succeed())
		setUnschedulable(node, false)
	}

	g.Eventually(func(g Gomega) {
		pods := natsPods(g)
		g.Expect(pods).To(HaveLen(servers))
		for _, p := range pods {
			g.Expect(podReady(&p)).To(BeTrue(), p.Name)
		}
		s := e.state(g)
		g.Expect(s.Type).To(Equal(datasancev3.ConditionReady), "%s: %s", s.Reason, s.Message)
	}).Should(Succeed())
	t.Logf("evictions per pod %v, refused %d times, fewest ready NATS servers %d", evicted, refused, watch.minimum())
	g.Expect(watch.minimum()).To(BeNumerically(">=", 2), "the quorum of three servers (two) stayed ready")
	g.Expect(evicted).To(HaveLen(servers), "every NATS server was evicted at least once: %v", evicted)
	g.Expect(refused).To(BeNumerically(">", 0), "the budget refused at least one eviction")
}
