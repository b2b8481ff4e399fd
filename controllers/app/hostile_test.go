package app_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/internal/metrics"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// Hostile tenant: the administrator of one vCluster fills it with 1,500 large cert-manager
// Certificates (the operator watches every Certificate of a vCluster: cert-manager creates them
// without the operator's label) and then rewrites the status of the Certificates of its own apps
// as fast as its API server takes it. The operator's memory stays flat (the watch keeps a trimmed
// copy of each object), the hostile tenant's passes and Git fetches stay within its event pacing
// (burst plus rate over the storm), and another tenant's change is committed and Synced while
// the storm goes on.
func TestHostileTenantCannotExhaustTheOperatorOrDelayAnotherTenant(t *testing.T) {
	const (
		hostileApps       = 5
		largeCertificates = 1500
		// padding is what each large Certificate carries beyond its spec: 16 KiB, 24 MiB in all.
		padding = 16 << 10
		// stormWrites is how many status writes the storm makes at least.
		stormWrites = 1500
		// forgedIngresses carry the operator's label without being any app's.
		forgedIngresses = 50
	)
	requireSuite(t)
	fluxCRDs, certManagerCRDs := vclusterCRDDirs(t)
	// The hostile tenant's vCluster is its own API server.
	evil, kubeconfig := ownVCluster(t, "hostile vcluster", fluxCRDs, certManagerCRDs)
	hostile := newFixture(t)
	hostile.addTenantIn("evil", kubeconfig)
	var tlsSecrets []string
	for i := range hostileApps {
		name := fmt.Sprintf("h%d", i)
		hostile.create(hostile.newApp(name, "evil", func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.TargetNamespace = "hostile"
			a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: name + ".example.com", TLS: true, ClusterIssuer: "letsencrypt"}
		}))
		a := hostile.waitReady(name)
		tlsSecrets = append(tlsSecrets, render.TLSSecretName(a))
	}
	hostile.g.Eventually(func() bool { return reconciler.WatchesVClusterKind(hostile.ns, "evil", "Certificate") }).Should(BeTrue())
	// The Certificates of the hostile apps' TLS Secrets, which the storm rewrites.
	for i, secret := range tlsSecrets {
		hostile.g.Expect(evil.Client.Create(hostile.ctx, certificate("hostile", secret, fmt.Sprintf("h%d.example.com", i)))).To(Succeed())
	}

	victim := newFixture(t)
	victim.addTenant("t1", time.Now())
	victim.create(victim.newApp("victim", "t1"))
	// baseline is how long the victim's change takes without the hostile tenant's storm.
	baseline := changeUntilSynced(victim, "victim", "nginx:1.27")

	// 1,500 large Certificates the operator has no use for.
	hostile.g.Expect(evil.Client.Create(hostile.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "junk"}})).To(Succeed())
	heapBefore := liveHeap()
	padded := strings.Repeat("x", padding)
	var created atomic.Int32
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < largeCertificates; i += 8 {
				c := certificate("junk", fmt.Sprintf("junk-%04d", i), fmt.Sprintf("junk-%04d.example.com", i))
				c.SetAnnotations(map[string]string{"hostile.example.com/padding": padded})
				if err := evil.Client.Create(hostile.ctx, c); err == nil {
					created.Add(1)
				}
			}
		})
	}
	wg.Wait()
	hostile.g.Expect(created.Load()).To(BeEquivalentTo(largeCertificates))
	// The watch delivers in order: once an event after the last large Certificate reached the
	// operator (a status change of a hostile app's Certificate starts a pass), every large one
	// is in its cache.
	before := hostile.passesOf(hostileApps)
	setCertificateReadyIn(hostile, evil.Client, "hostile", tlsSecrets[0], metav1.ConditionFalse, "Pending", "after the large Certificates")
	hostile.g.Eventually(func() int { return hostile.passesOf(hostileApps) }).Should(BeNumerically(">", before))
	heapAfter := liveHeap()
	t.Logf("live heap %d MiB before the %d large Certificates (%d MiB of padding), %d MiB after",
		heapBefore>>20, largeCertificates, largeCertificates*padding>>20, heapAfter>>20)
	hostile.g.Expect(heapAfter-heapBefore).To(BeNumerically("<", int64(largeCertificates*padding/3)),
		"the watch holds the large Certificates whole")

	// Objects with the operator's label, which the tenant can put on anything: the watch caches
	// them (trimmed) but maps an event to an app by the object's exact name, so none of them
	// starts a pass or even reaches the pacing. The app's own Ingress, created after them as Flux
	// would, is the sync point: the Ingress watch delivers in order, so once its event reached the
	// pacing the forged objects' events were handled. (A pass of the hostile apps is no sync
	// point: one may run for another reason before the Ingress's event arrives.)
	forgedEvents, forgedPasses := counterByLabel(t, metrics.AppVClusterEventsTotal, "outcome"), hostile.passesOf(hostileApps)
	offeredSinceForged := func() int {
		n := 0
		for outcome, v := range counterByLabel(t, metrics.AppVClusterEventsTotal, "outcome") {
			n += v - forgedEvents[outcome]
		}
		return n
	}
	for i := range forgedIngresses {
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "hostile", Name: fmt.Sprintf("forged-%d", i),
			Labels: map[string]string{render.LabelManagedBy: render.ManagedBy}},
			Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
				Name: "x", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
		hostile.g.Expect(evil.Client.Create(hostile.ctx, ing)).To(Succeed())
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.1"}}
		hostile.g.Expect(evil.Client.Status().Update(hostile.ctx, ing)).To(Succeed())
	}
	hostile.g.Expect(evil.Client.Create(hostile.ctx, render.Ingress(hostile.get("h0")))).To(Succeed())
	hostile.g.Eventually(offeredSinceForged).Should(BeNumerically(">=", 1))
	hostile.g.Eventually(func() int { return hostile.passesOf(hostileApps) }).Should(BeNumerically(">", forgedPasses))
	hostile.g.Expect(offeredSinceForged()).To(Equal(1), "events of forged objects reached the pacing (only the app's Ingress should)")

	// The status storm, and the victim's change during it.
	// The pacing's tokens accrue from here to the second reading.
	stormStart := time.Now()
	stormPasses, stormFetches, stormEvents := hostile.passesOf(hostileApps), gitServer.Fetches(hostile.repo), counterByLabel(t, metrics.AppVClusterEventsTotal, "outcome")
	calm := make(chan struct{})
	var patches atomic.Int64
	var storm sync.WaitGroup
	for i, secret := range tlsSecrets {
		storm.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-calm:
					return
				default:
				}
				if rewriteCertificateStatus(hostile, evil.Client, "hostile", secret, fmt.Sprintf("attempt %d of h%d", n, i)) == nil {
					patches.Add(1)
				}
			}
		})
	}
	// The storm runs for a while before the victim changes.
	hostile.g.Eventually(patches.Load).Should(BeNumerically(">=", 500))
	during := changeUntilSynced(victim, "victim", "nginx:1.28")
	// Long enough that the pacing, not its burst, bounds the passes.
	hostile.g.Eventually(patches.Load, time.Minute).Should(BeNumerically(">=", stormWrites))
	close(calm)
	storm.Wait()
	passes := hostile.passesOf(hostileApps) - stormPasses
	fetches := gitServer.Fetches(hostile.repo) - stormFetches
	events := counterByLabel(t, metrics.AppVClusterEventsTotal, "outcome")
	elapsed := time.Since(stormStart)
	for outcome := range events {
		events[outcome] -= stormEvents[outcome]
	}
	started := events[metrics.VClusterEventEnqueued] + events[metrics.VClusterEventReleased]
	// The burst and the rate over the storm; the victim's few events (its Kustomization's
	// status) count in the same metric.
	bound := app.DefaultTenantEventBurst + int(app.DefaultTenantEventRate*elapsed.Seconds()) + 5
	t.Logf("storm: %d status writes in %s: vCluster events %v; %d passes and %d Git fetches of the hostile tenant's apps (pacing bound %d passes started); "+
		"the victim's change was Synced in %s (%s without the storm)", patches.Load(), elapsed.Round(time.Millisecond), events, passes, fetches, bound,
		during.Round(time.Millisecond), baseline.Round(time.Millisecond))
	hostile.g.Expect(patches.Load()).To(BeNumerically(">", int64(2*bound)), "the storm must outrun the pacing for the test to mean anything")
	hostile.g.Expect(started).To(BeNumerically("<=", bound), "the hostile tenant's events started passes beyond its pacing")
	// Each started pass may be followed by one that reads its push's outcome (pushes.go).
	hostile.g.Expect(passes).To(BeNumerically("<=", 2*started+hostileApps), "passes the pacing did not start")
	hostile.g.Expect(fetches).To(BeNumerically("<=", started+hostileApps), "more Git fetches than paced passes")
}

// counterByLabel reads counter name by the values of its label from the manager's registry
// (the operator runs in this process).
func counterByLabel(t *testing.T, name, label string) map[string]int {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] = int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}

// changeUntilSynced changes the app's image, writes the status Flux writes once it applied the
// new commit, and returns how long it took until the app was Synced.
func changeUntilSynced(f *fixture, name, image string) time.Duration {
	f.t.Helper()
	start := time.Now()
	old := f.get(name).Status.Commit
	f.update(name, func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = image })
	var commit string
	f.g.Eventually(func() string {
		commit = f.get(name).Status.Commit
		return commit
	}).ShouldNot(Or(BeEmpty(), Equal(old)))
	a := f.get(name)
	setKustomizationStatus(f, render.FluxName(a), "main@sha1:"+commit, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: main@sha1:"+commit)
	f.waitCondition(name, kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	return time.Since(start)
}

// passesOf is the number of passes of the fixture's apps h0 … h<n-1>.
func (f *fixture) passesOf(n int) int {
	total := 0
	for i := range n {
		total += passes.of(f.ns, fmt.Sprintf("h%d", i))
	}
	return total
}

// liveHeap is the Go heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// setCertificateReadyIn writes, through c, the Ready condition cert-manager writes.
func setCertificateReadyIn(f *fixture, c client.Client, ns, name string, status metav1.ConditionStatus, reason, message string) {
	f.t.Helper()
	f.g.Eventually(func() error {
		return writeCertificateStatus(f, c, ns, name, status, reason, message)
	}).Should(Succeed())
}

// rewriteCertificateStatus writes a new Ready message on the Certificate: one write of the storm.
func rewriteCertificateStatus(f *fixture, c client.Client, ns, name, message string) error {
	return writeCertificateStatus(f, c, ns, name, metav1.ConditionFalse, "Pending", message)
}

func writeCertificateStatus(f *fixture, c client.Client, ns, name string, status metav1.ConditionStatus, reason, message string) error {
	cert := &unstructured.Unstructured{}
	cert.SetAPIVersion("cert-manager.io/v1")
	cert.SetKind("Certificate")
	if err := c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, cert); err != nil {
		return err
	}
	if err := unstructured.SetNestedSlice(cert.Object, []any{certificateCondition(status, reason, message, cert.GetGeneration())}, "status", "conditions"); err != nil {
		return err
	}
	return c.Status().Update(f.ctx, cert)
}
