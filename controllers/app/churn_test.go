package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// Status churn of watched objects costs an app nothing: no pass, no Git fetch, no API request.
// Each churn round is followed by a real change of another object of the same informer (events
// of one informer are handled in order), whose app's pass is the proof that the churn's events
// were handled; a churn event that enqueued the app would have started its pass before that one.

// fluxReconcile writes the Kustomization's status the way kustomize-controller does in one
// reconcile: Ready=Unknown (Progressing) with Reconciling=True when it starts, then the outcome
// (Ready status, reason, message; lastAppliedRevision set only on success).
func fluxReconcile(f *fixture, name, revision string, ready metav1.ConditionStatus, reason, message string) {
	f.t.Helper()
	write := func(mutate func(*kustomizev1.Kustomization)) {
		f.g.Eventually(func() error {
			ks := &kustomizev1.Kustomization{}
			f.g.Expect(f.vc(ks, "flux-system", name)).To(BeTrue())
			mutate(ks)
			return vcluster.Client.Status().Update(f.ctx, ks)
		}).Should(Succeed())
	}
	write(func(ks *kustomizev1.Kustomization) {
		apimeta.SetStatusCondition(&ks.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition,
			Status: metav1.ConditionUnknown, Reason: meta.ProgressingReason, Message: "Reconciliation in progress", ObservedGeneration: ks.Generation})
		apimeta.SetStatusCondition(&ks.Status.Conditions, metav1.Condition{Type: meta.ReconcilingCondition,
			Status: metav1.ConditionTrue, Reason: meta.ProgressingReason, Message: "Reconciliation in progress", ObservedGeneration: ks.Generation})
	})
	write(func(ks *kustomizev1.Kustomization) {
		apimeta.RemoveStatusCondition(&ks.Status.Conditions, meta.ReconcilingCondition)
		apimeta.SetStatusCondition(&ks.Status.Conditions, metav1.Condition{Type: meta.ReadyCondition,
			Status: ready, Reason: reason, Message: message, ObservedGeneration: ks.Generation})
		ks.Status.ObservedGeneration = ks.Generation
		ks.Status.LastAttemptedRevision = revision
		if ready == metav1.ConditionTrue {
			ks.Status.LastAppliedRevision = revision
		}
	})
}

// costs is what an app's passes cost: the passes, the fetches of its repository, its uncached
// reads of the Git Secrets on the host, and the vCluster requests naming it.
type costs struct{ passes, fetches, secretReads, vclusterRequests int }

func (f *fixture) costsOf(name string) costs {
	return costs{
		passes:           passes.of(f.ns, name),
		fetches:          gitServer.Fetches(f.repo),
		secretReads:      hostRequests.reads("/secrets/"+gitSecret) + hostRequests.reads("/secrets/"+fluxSecret),
		vclusterRequests: vclusterRequests.naming(name),
	}
}

// barrierApp is an app of the fixture with a repository and Git Secrets of its own, so that its
// passes add nothing to the costs of the fixture's other apps.
func (f *fixture) barrierApp(name, tenant string) *kubeoperav1alpha1.KubeOperaApp {
	f.t.Helper()
	for _, s := range []struct{ name, from string }{{gitSecret + "-" + name, gitSecret}, {fluxSecret + "-" + name, fluxSecret}} {
		src := &corev1.Secret{}
		f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: s.from}, src)).To(Succeed())
		f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: s.name, Labels: src.Labels}, Data: src.Data})
	}
	return f.newApp(name, tenant, func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.URL = gitServer.URL(f.repo + "-" + name)
		a.Spec.Git.SecretRef.Name = gitSecret + "-" + name
		a.Spec.Git.FluxSecretRef.Name = fluxSecret + "-" + name
	})
}

// settle waits until no pass of the app finished for a second: the passes that creating it
// queued (its Kustomization's first sight among them) are over before the costs are counted.
func (f *fixture) settle(name string) {
	f.t.Helper()
	last := -1
	f.g.Eventually(func() bool {
		n := passes.of(f.ns, name)
		quiet := n == last
		last = n
		return quiet
	}, timeout, time.Second).Should(BeTrue(), "passes of %s keep coming", name)
}

func TestKustomizationStatusChurnCostsNothing(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("churn", "t1"), f.barrierApp("barrier", "t1"))
	a := f.waitReady("churn")
	f.waitReady("barrier")
	churnKs, barrierKs := f.ns+"-churn", f.ns+"-barrier"
	revision := "main@sha1:" + a.Status.Commit
	applied := "Applied revision: " + revision
	fluxReconcile(f, churnKs, revision, metav1.ConditionTrue, "ReconciliationSucceeded", applied)
	f.waitCondition("churn", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.settle("churn")
	start := f.costsOf("churn")

	for round := 1; round <= 3; round++ {
		// Flux's periodic reconcile of the applied revision: nothing a pass reads changes.
		fluxReconcile(f, churnKs, revision, metav1.ConditionTrue, "ReconciliationSucceeded", applied)
		barrierMessage := fmt.Sprintf("Deployment/barrier not ready (round %d)", round)
		fluxReconcile(f, barrierKs, "", metav1.ConditionFalse, "HealthCheckFailed", barrierMessage)
		f.g.Eventually(func() string { return conditionMessage(f.get("barrier"), kubeoperav1alpha1.ConditionSynced) }).
			Should(ContainSubstring(barrierMessage))
	}
	f.g.Expect(f.costsOf("churn")).To(Equal(start), "Flux's periodic reconciles cost the app something")

	// A real change: Flux now fails to apply the revision. One reconcile reports it.
	fluxReconcile(f, churnKs, revision, metav1.ConditionFalse, "HealthCheckFailed", "Deployment/churn not ready")
	f.waitCondition("churn", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationNotReady)
	f.expectOneReconcile("churn", start)
}

// expectOneReconcile waits for, and checks, the cost of exactly one reconcile of the app since
// start: the pass that submits its folder to the Git writer and the pass the push's callback
// queues (pushes.go), with one fetch of its repository.
func (f *fixture) expectOneReconcile(name string, start costs) {
	f.t.Helper()
	f.g.Eventually(func() int { return passes.of(f.ns, name) }).Should(BeNumerically(">=", start.passes+2))
	f.settle(name)
	end := f.costsOf(name)
	f.g.Expect(end.passes).To(Equal(start.passes+2), "passes for one real change")
	f.g.Expect(end.fetches).To(Equal(start.fetches+1), "Git fetches for one real change")
	f.g.Expect(end.secretReads).To(Equal(start.secretReads), "the Git Secrets did not change, yet were read again")
}

// The Git Secrets' data is read once and kept while the Secret's resourceVersion stays
// (secretdata.go): passes cost no Secret read, a changed Secret is read at once and used.
func TestGitSecretsAreReadAgainOnlyWhenTheyChange(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("creds", "t1"))
	a := f.waitReady("creds")
	f.settle("creds")
	start := f.costsOf("creds")
	f.g.Expect(start.secretReads).To(BeNumerically(">", 0), "the first passes read the Git Secrets")

	// A pass for something else (Flux failed to apply) reads no Secret: expectOneReconcile.
	fluxReconcile(f, f.ns+"-creds", "main@sha1:"+a.Status.Commit, metav1.ConditionFalse, "HealthCheckFailed", "Deployment/creds not ready")
	f.waitCondition("creds", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationNotReady)
	f.expectOneReconcile("creds", start)

	setPassword := func(password string) {
		f.g.Eventually(func() error {
			secret := &corev1.Secret{}
			f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: gitSecret}, secret)).To(Succeed())
			secret.Data["password"] = []byte(password)
			return host.Client.Update(f.ctx, secret)
		}).Should(Succeed())
	}
	// A changed password is read and used by the pass the change brings.
	before := f.costsOf("creds").secretReads
	setPassword("not-" + gitServer.Password)
	f.waitCondition("creds", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitAuthFailed)
	f.g.Expect(f.costsOf("creds").secretReads).To(BeNumerically(">", before))
	setPassword(gitServer.Password)
	f.waitCondition("creds", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
}

func TestTenantStatusChurnDoesNotEnqueueItsApps(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.addTenant("t2", time.Now())
	f.create(f.newApp("steady", "t1"), f.barrierApp("barrier", "t2"))
	f.waitReady("steady")
	f.waitReady("barrier")
	f.settle("steady")
	f.settle("barrier")
	start := f.costsOf("steady")

	updateTenant := func(name string, mutate func(*tenantv1alpha1.Tenant), status bool) {
		f.g.Eventually(func() error {
			tn := &tenantv1alpha1.Tenant{}
			f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, tn)).To(Succeed())
			mutate(tn)
			if status {
				return host.Client.Status().Update(f.ctx, tn)
			}
			return host.Client.Update(f.ctx, tn)
		}).Should(Succeed())
	}
	for round := 1; round <= 3; round++ {
		// What a tenant-controller writes while nothing an app depends on changes: Ready's
		// message and observed generation, a condition of its own.
		updateTenant("t1", func(tn *tenantv1alpha1.Tenant) {
			ready := apimeta.FindStatusCondition(tn.Status.Conditions, tenantv1alpha1.ConditionReady)
			ready.Message = fmt.Sprintf("vCluster healthy (check %d)", round)
			ready.ObservedGeneration = tn.Generation
			apimeta.SetStatusCondition(&tn.Status.Conditions, metav1.Condition{Type: "BackupSucceeded",
				Status: metav1.ConditionTrue, Reason: "Scheduled", Message: fmt.Sprintf("backup %d", round)})
		}, true)
		// A spec change of the barrier's Tenant (same informer) does reach the barrier app.
		before := passes.of(f.ns, "barrier")
		updateTenant("t2", func(tn *tenantv1alpha1.Tenant) {
			tn.Spec.CloudSpaceID = fmt.Sprintf("%s-round-%d", f.cloudSpace, round)
		}, false)
		f.g.Eventually(func() int { return passes.of(f.ns, "barrier") }).Should(BeNumerically(">", before))
	}
	f.g.Expect(f.costsOf("steady")).To(Equal(start), "the Tenant's status churn cost the app something")

	// A real change of the app's Tenant (its spec) brings it back for one reconcile.
	updateTenant("t1", func(tn *tenantv1alpha1.Tenant) { tn.Spec.CloudSpaceID = f.cloudSpace + "-changed" }, false)
	f.expectOneReconcile("steady", start)
}

// naming returns the number of requests whose path names name (a path segment starting or ending
// with it: the app's Deployment, its <namespace>-<name> Flux objects).
func (c *requestCounter) naming(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.count {
		for _, seg := range strings.Split(k, "/") {
			if seg == name || strings.HasSuffix(seg, "-"+name) {
				n += v
				break
			}
		}
	}
	return n
}
