package testbed_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/test/testbed"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// The test bed's own tests: what a suite relies on when it starts a cluster. Every test shares one
// cluster with OpenShift's admission on (started by the first test that needs it), so the pods
// below also pass through the SCC admission.
var (
	clusterOnce sync.Once
	cluster     *testbed.Cluster
	clusterErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster != nil {
		_ = cluster.Stop()
	}
	os.Exit(code)
}

// start returns the shared cluster; missing binaries fail the test (skip it under -short).
func start(t *testing.T) {
	t.Helper()
	clusterOnce.Do(func() { cluster, clusterErr = testbed.Start(context.Background(), testbed.Options{OpenShift: true}) })
	if clusterErr != nil {
		if testenv.MaySkipMissingTools() {
			t.Skip(clusterErr)
		}
		t.Fatal(clusterErr)
	}
}

const waitLong = time.Minute

func namespace(t *testing.T) string {
	t.Helper()
	start(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tb-"}}
	if err := cluster.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func deployment(ns, name string, replicas int32, edit func(*corev1.PodTemplateSpec)) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	tpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "example.invalid/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
			}},
		}}},
	}
	if edit != nil {
		edit(&tpl)
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: tpl,
		},
	}
}

func pods(g Gomega, ns, app string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(cluster.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"app": app})).To(Succeed())
	return list.Items
}

func TestDeploymentPodsAreScheduledAndRunReady(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	d := deployment(ns, "web", 3, nil)
	g.Expect(cluster.Client.Create(ctx, d)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(3)))
	}, waitLong, 100*time.Millisecond).Should(Succeed())

	nodes := map[string]bool{}
	for _, p := range pods(g, ns, "web") {
		g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
		g.Expect(p.Spec.NodeName).To(HavePrefix("testbed-node-"), "placed by the scheduler")
		g.Expect(p.Status.PodIP).NotTo(BeEmpty())
		g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(p.Status.ContainerStatuses[0].Ready).To(BeTrue())
		// Admitted by restricted-v2, which gave the container the namespace's first UID.
		g.Expect(p.Annotations).To(HaveKeyWithValue(testbed.AnnotationValidatedSCC, "restricted-v2"))
		g.Expect(*p.Spec.Containers[0].SecurityContext.RunAsUser).To(BeNumerically(">=", int64(1000000000)))
		nodes[p.Spec.NodeName] = true
	}
	// The scheduler's default spread puts three replicas on more than one node.
	g.Expect(len(nodes)).To(BeNumerically(">", 1))
}

func TestFailingPodsReportWhatAKubeletReports(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cases := []struct {
		fail string
		want func(g Gomega, p corev1.Pod)
	}{
		{testbed.FailImagePull, func(g Gomega, p corev1.Pod) {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			g.Expect(p.Status.ContainerStatuses[0].State.Waiting).NotTo(BeNil())
			g.Expect(p.Status.ContainerStatuses[0].State.Waiting.Reason).To(Equal("ImagePullBackOff"))
		}},
		{testbed.FailCrashLoop, func(g Gomega, p corev1.Pod) {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			cs := p.Status.ContainerStatuses[0]
			g.Expect(cs.State.Waiting).NotTo(BeNil())
			g.Expect(cs.State.Waiting.Reason).To(Equal("CrashLoopBackOff"))
			g.Expect(cs.RestartCount).To(BeNumerically(">=", 2), "the restart count keeps rising")
			g.Expect(cs.LastTerminationState.Terminated).NotTo(BeNil())
		}},
		{testbed.FailNotReady, func(g Gomega, p corev1.Pod) {
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			g.Expect(p.Status.ContainerStatuses[0].Ready).To(BeFalse())
			g.Expect(p.Status.ContainerStatuses[0].State.Running).NotTo(BeNil())
		}},
	}
	for i, tc := range cases {
		name := strings.ToLower(tc.fail)
		d := deployment(ns, name, 1, func(tpl *corev1.PodTemplateSpec) {
			// The first failure is selected by the image, the others by the annotation.
			if i == 0 {
				tpl.Spec.Containers[0].Image = testbed.FailImage(tc.fail)
				return
			}
			tpl.Annotations = map[string]string{testbed.FailAnnotation: tc.fail}
		})
		if err := cluster.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		t.Run(tc.fail, func(t *testing.T) {
			g := NewWithT(t)
			name := strings.ToLower(tc.fail)
			g.Eventually(func(g Gomega) {
				ps := pods(g, ns, name)
				g.Expect(ps).To(HaveLen(1))
				tc.want(g, ps[0])
			}, waitLong, 200*time.Millisecond).Should(Succeed())
			d := &appsv1.Deployment{}
			g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)).To(Succeed())
			g.Expect(d.Status.AvailableReplicas).To(BeZero())
		})
	}
}

func TestARunningPodCrashes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	d := deployment(ns, "crash", 1, nil)
	g.Expect(cluster.Client.Create(ctx, d)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(1)))
	}, waitLong, 100*time.Millisecond).Should(Succeed())
	ps := pods(g, ns, "crash")
	g.Expect(ps).To(HaveLen(1))
	g.Expect(cluster.CrashPod(ctx, &ps[0])).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(BeZero())
		p := &corev1.Pod{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(&ps[0]), p)).To(Succeed())
		g.Expect(p.Status.ContainerStatuses[0].State.Waiting).NotTo(BeNil())
		g.Expect(p.Status.ContainerStatuses[0].State.Waiting.Reason).To(Equal("CrashLoopBackOff"))
		g.Expect(p.Status.ContainerStatuses[0].RestartCount).To(BeNumerically(">=", 1))
	}, waitLong, 100*time.Millisecond).Should(Succeed())
}

// replicaFailure waits for the ReplicaSet of a Deployment to report ReplicaFailure (FailedCreate)
// and returns its message.
func replicaFailure(g Gomega, ns, app string) string {
	var msg string
	g.Eventually(func(g Gomega) {
		list := &appsv1.ReplicaSetList{}
		g.Expect(cluster.Client.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"app": app})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		var found bool
		for _, c := range list.Items[0].Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
				g.Expect(c.Reason).To(Equal("FailedCreate"))
				msg, found = c.Message, true
			}
		}
		g.Expect(found).To(BeTrue(), "no ReplicaFailure condition yet")
	}, waitLong, 200*time.Millisecond).Should(Succeed())
	return msg
}

func TestRestrictedV2RefusesAFixedUID(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	uid := int64(10000)
	d := deployment(ns, "fixed", 1, func(tpl *corev1.PodTemplateSpec) {
		tpl.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid}
	})
	g.Expect(cluster.Client.Create(context.Background(), d)).To(Succeed())
	msg := replicaFailure(g, ns, "fixed")
	g.Expect(msg).To(ContainSubstring("unable to validate against any security context constraint"))
	g.Expect(msg).To(ContainSubstring("runAsUser: Invalid value: 10000: must be in the ranges"))
	g.Expect(msg).To(ContainSubstring("fsGroup: Invalid value: []int64{10000}"))
	g.Expect(pods(g, ns, "fixed")).To(BeEmpty())
}

// TestNonrootV2AdmitsAFixedUIDOnceTheServiceAccountMayUseIt: pods that run as their image's user
// 10000 are refused while their ServiceAccount may use restricted-v2 only; a RoleBinding of the
// ServiceAccount to OpenShift's ClusterRole system:openshift:scc:nonroot-v2 in the namespace lets
// the ReplicaSet create them, admitted by nonroot-v2; a pod that sets no IDs, under the same
// ServiceAccount, is still restricted-v2's.
func TestNonrootV2AdmitsAFixedUIDOnceTheServiceAccountMayUseIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "image-user"}}
	g.Expect(cluster.Client.Create(ctx, sa)).To(Succeed())
	uid := int64(10000)
	d := deployment(ns, "imageuser", 1, func(tpl *corev1.PodTemplateSpec) {
		tpl.Spec.ServiceAccountName = sa.Name
		tpl.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid, RunAsNonRoot: new(true)}
	})
	g.Expect(cluster.Client.Create(ctx, d)).To(Succeed())
	msg := replicaFailure(g, ns, "imageuser")
	g.Expect(msg).To(ContainSubstring("provider restricted-v2: .containers[0].runAsUser: Invalid value: 10000: must be in the ranges: [1000"))
	g.Expect(msg).To(ContainSubstring(`provider "nonroot-v2": Forbidden: not usable by user or serviceaccount`))
	g.Expect(pods(g, ns, "imageuser")).To(BeEmpty())

	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "image-user-nonroot-v2"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:openshift:scc:nonroot-v2"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	g.Expect(cluster.Client.Create(ctx, binding)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(1)))
	}, waitLong, 200*time.Millisecond).Should(Succeed(), "the ReplicaSet controller's next try creates the pod")
	ps := pods(g, ns, "imageuser")
	g.Expect(ps).To(HaveLen(1))
	g.Expect(ps[0].Annotations).To(HaveKeyWithValue(testbed.AnnotationValidatedSCC, "nonroot-v2"))
	g.Expect(*ps[0].Spec.SecurityContext.RunAsUser).To(Equal(uid))
	g.Expect(*ps[0].Spec.SecurityContext.FSGroup).To(Equal(uid))
	g.Expect(ps[0].Spec.Containers[0].SecurityContext.RunAsUser).To(BeNil(), "nonroot-v2 assigns no UID")

	plain := deployment(ns, "plain", 1, func(tpl *corev1.PodTemplateSpec) { tpl.Spec.ServiceAccountName = sa.Name })
	g.Expect(cluster.Client.Create(ctx, plain)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ps := pods(g, ns, "plain")
		g.Expect(ps).To(HaveLen(1))
		g.Expect(ps[0].Annotations).To(HaveKeyWithValue(testbed.AnnotationValidatedSCC, "restricted-v2"))
		g.Expect(*ps[0].Spec.Containers[0].SecurityContext.RunAsUser).To(BeNumerically(">=", int64(1000000000)))
	}, waitLong, 200*time.Millisecond).Should(Succeed())
}

// TestOpenShiftServesSecurityContextConstraints: the API serves OpenShift's SCC kind (what the
// operator tells OpenShift by) and holds the ClusterRoles that grant the use of restricted-v2
// and nonroot-v2, restricted-v2's bound to every authenticated user.
func TestOpenShiftServesSecurityContextConstraints(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	start(t)
	m, err := cluster.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: testbed.SCCGroup, Kind: "SecurityContextConstraints"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Resource.Resource).To(Equal("securitycontextconstraints"))
	g.Expect(m.Scope.Name()).To(Equal(meta.RESTScopeNameRoot))
	for _, scc := range []string{"restricted-v2", "nonroot-v2"} {
		role := &rbacv1.ClusterRole{}
		g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: "system:openshift:scc:" + scc}, role)).To(Succeed())
		g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{
			APIGroups: []string{testbed.SCCGroup}, Resources: []string{"securitycontextconstraints"},
			ResourceNames: []string{scc}, Verbs: []string{"use"},
		}}))
	}
	binding := &rbacv1.ClusterRoleBinding{}
	g.Expect(cluster.Client.Get(ctx, client.ObjectKey{Name: "system:openshift:scc:restricted-v2"}, binding)).To(Succeed())
	g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}))
}

func TestResourceQuotaRefusesBestEffortPods(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compute"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourceRequestsCPU: resource.MustParse("2"), corev1.ResourceLimitsMemory: resource.MustParse("2Gi"),
		}},
	}
	g.Expect(cluster.Client.Create(ctx, quota)).To(Succeed())
	// The quota controller fills the status the admission plugin counts against.
	g.Eventually(func(g Gomega) {
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		g.Expect(quota.Status.Hard).NotTo(BeEmpty())
	}, waitLong, 100*time.Millisecond).Should(Succeed())

	d := deployment(ns, "besteffort", 1, func(tpl *corev1.PodTemplateSpec) { tpl.Spec.Containers[0].Resources = corev1.ResourceRequirements{} })
	g.Expect(cluster.Client.Create(ctx, d)).To(Succeed())
	msg := replicaFailure(g, ns, "besteffort")
	g.Expect(msg).To(ContainSubstring("failed quota: compute"))
	g.Expect(msg).To(ContainSubstring("must specify limits.memory for: app; requests.cpu for: app"))
}

func TestStatefulSetClaimsBind(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: new(int32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "db", Image: "example.invalid/db:1",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	g.Expect(cluster.Client.Create(ctx, sts)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())
		g.Expect(sts.Status.ReadyReplicas).To(Equal(int32(2)))
	}, waitLong, 100*time.Millisecond).Should(Succeed())
	claims := &corev1.PersistentVolumeClaimList{}
	g.Expect(cluster.Client.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
	g.Expect(claims.Items).To(HaveLen(2))
	for _, c := range claims.Items {
		g.Expect(c.Status.Phase).To(Equal(corev1.ClaimBound), c.Name)
		g.Expect(*c.Spec.StorageClassName).To(Equal(testbed.StorageClass), "the default class is set by admission")
		g.Expect(c.Finalizers).To(ContainElement("kubernetes.io/pvc-protection"))
	}
}

func TestGarbageCollectorAndNamespaceDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	g.Expect(cluster.Client.Create(ctx, owner)).To(Succeed())
	dependent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dependent", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
	}}}}
	kept := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept"}}
	g.Expect(cluster.Client.Create(ctx, dependent)).To(Succeed())
	g.Expect(cluster.Client.Create(ctx, kept)).To(Succeed())

	g.Expect(cluster.Client.Delete(ctx, owner)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(dependent), &corev1.ConfigMap{}))
	}, waitLong, 100*time.Millisecond).Should(BeTrue(), "the garbage collector deletes the dependent")
	g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(kept), &corev1.ConfigMap{})).To(Succeed())

	g.Expect(cluster.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}, waitLong, 200*time.Millisecond).Should(BeTrue(), "the namespace controller empties and removes the namespace")
}

func TestEvictionRespectsThePodDisruptionBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	d := deployment(ns, "quorum", 3, nil)
	g.Expect(cluster.Client.Create(ctx, d)).To(Succeed())
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quorum"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: new(intstr.FromInt32(3)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "quorum"}},
		},
	}
	g.Expect(cluster.Client.Create(ctx, pdb)).To(Succeed())
	allowed := func(n int32) {
		g.Eventually(func(g Gomega) {
			g.Expect(cluster.Client.Get(ctx, client.ObjectKeyFromObject(pdb), pdb)).To(Succeed())
			g.Expect(pdb.Status.ObservedGeneration).To(Equal(pdb.Generation))
			g.Expect(pdb.Status.CurrentHealthy).To(Equal(int32(3)))
			g.Expect(pdb.Status.DisruptionsAllowed).To(Equal(n))
		}, waitLong, 100*time.Millisecond).Should(Succeed())
	}
	allowed(0)

	cs, err := kubernetes.NewForConfig(cluster.Config)
	g.Expect(err).NotTo(HaveOccurred())
	ps := pods(g, ns, "quorum")
	g.Expect(ps).To(HaveLen(3))
	evict := func(p corev1.Pod) error {
		return cs.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.Name}})
	}
	err = evict(ps[0])
	g.Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "eviction below the budget: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("disruption budget"))

	pdb.Spec.MinAvailable = new(intstr.FromInt32(2))
	g.Expect(cluster.Client.Update(ctx, pdb)).To(Succeed())
	allowed(1)
	g.Expect(evict(ps[0])).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cluster.Client.Get(ctx, client.ObjectKeyFromObject(&ps[0]), &corev1.Pod{}))
	}, waitLong, 100*time.Millisecond).Should(BeTrue(), "the evicted pod is gone")
}
