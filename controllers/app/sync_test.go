package app_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// setKustomizationStatus writes the status kustomize-controller would write.
func setKustomizationStatus(f *fixture, name, revision string, ready metav1.ConditionStatus, reason, message string) {
	f.t.Helper()
	ks := &kustomizev1.Kustomization{}
	writeFluxStatus(f, ks, name, func() {
		ks.Status.ObservedGeneration = ks.Generation
		ks.Status.LastAppliedRevision = revision
		ks.Status.LastAttemptedRevision = revision
		ks.Status.Conditions = fluxReady(ks.Generation, ready, reason, message)
	})
}

// writeFluxStatus reads the Flux object name of the vCluster's flux-system into obj, lets set
// change its status and writes the status, as a Flux controller does, until the write succeeds.
func writeFluxStatus(f *fixture, obj client.Object, name string, set func()) {
	f.t.Helper()
	f.g.Eventually(func() error {
		f.g.Expect(f.vc(obj, "flux-system", name)).To(BeTrue())
		set()
		return vcluster.Client.Status().Update(f.ctx, obj)
	}).Should(Succeed())
}

// fluxReady is the one Ready condition of a Flux object's status, for generation.
func fluxReady(generation int64, ready metav1.ConditionStatus, reason, message string) []metav1.Condition {
	return []metav1.Condition{{
		Type: meta.ReadyCondition, Status: ready, Reason: reason, Message: message,
		LastTransitionTime: metav1.Now(), ObservedGeneration: generation,
	}}
}

func TestSyncedIsReadBackFromTheKustomization(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("synced", "t1"))
	a := f.waitReady("synced")
	name := f.ns + "-synced"
	commit := a.Status.Commit

	// Flux failed to apply.
	setKustomizationStatus(f, name, "", metav1.ConditionFalse, "ReconciliationFailed", "Deployment/synced dry-run failed")
	f.poke("synced")
	a = f.waitCondition("synced", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationNotReady)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionSynced)).To(ContainSubstring("dry-run failed"))

	// Flux applied an older commit only.
	setKustomizationStatus(f, name, "main@sha1:0123456789abcdef0123456789abcdef01234567", metav1.ConditionTrue, "ReconciliationSucceeded", "Applied")
	f.poke("synced")
	f.waitCondition("synced", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied)

	// Flux applied the pushed commit and is Ready.
	setKustomizationStatus(f, name, "main@sha1:"+commit, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: main@sha1:"+commit)
	f.poke("synced")
	a = f.waitCondition("synced", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Expect(a.Status.AppliedRevision).To(Equal("main@sha1:" + commit))
	f.g.Expect(a.Status.Commit).To(Equal(commit))

	// A pass that cannot read the Kustomization back does not leave Synced green.
	tn := &tenantv1alpha1.Tenant{}
	f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "t1"}, tn)).To(Succeed())
	f.g.Expect(apptest.SetTenantReady(f.ctx, host.Client, tn, false, time.Now())).To(Succeed())
	f.waitCondition("synced", kubeoperav1alpha1.ConditionSynced, metav1.ConditionUnknown, kubeoperav1alpha1.ReasonTenantNotReady)
	f.g.Expect(apptest.SetTenantReady(f.ctx, host.Client, tn, true, time.Now())).To(Succeed())
	f.waitCondition("synced", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
}

// newAppWaitingForFlux creates app name in a Tenant of a new fixture and waits until the
// operator's part is done (Ready) and the app waits for Flux to apply its commit.
func newAppWaitingForFlux(t *testing.T, name string) (*fixture, *kubeoperav1alpha1.KubeOperaApp) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp(name, "t1"))
	a := f.waitReady(name)
	f.waitCondition(name, kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied)
	return f, a
}

// TestAnAppRecordsItsDecisionsOnly: from creation to Synced an app records four Events, each a
// decision or an action: where it went (TenantSelected), what was pushed (Committed), the
// operator's part done (Ready True) and Flux's (Synced True). A pass starting and the wait for
// Flux to apply a commit are conditions only: a change records its Committed Event and, once
// Flux applied it, Synced True again, and nothing for the wait between them.
func TestAnAppRecordsItsDecisionsOnly(t *testing.T) {
	f, a := newAppWaitingForFlux(t, "fresh")
	f.fluxApplied("fresh", a.Status.Commit)
	f.waitCondition("fresh", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	// Events are recorded asynchronously, in order: once the last is there, all are.
	want := []string{"Normal TenantSelected", "Normal Committed", "Normal Succeeded Ready=True", "Normal Succeeded Synced=True"}
	f.g.Eventually(func() []string { return eventLabels(f, "fresh") }).Should(ConsistOf(want))

	commit := f.setImage("fresh", "ghcr.io/example/fresh:2.0.0")
	f.waitCondition("fresh", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied)
	f.fluxApplied("fresh", commit)
	f.waitCondition("fresh", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	want = append(want, "Normal Committed", "Normal Succeeded Synced=True")
	f.g.Eventually(func() []string { return eventLabels(f, "fresh") }).Should(ConsistOf(want))
}

// eventLabels names the app's Events by type and reason, and for a Ready or Synced change by
// the condition's new status ("Normal Succeeded Synced=True"); a repeated Event is one label.
func eventLabels(f *fixture, name string) []string {
	var out []string
	for _, e := range f.events(name) {
		label := e.Type + " " + e.Reason
		if cond, _, ok := strings.Cut(e.Note, ":"); ok && (strings.HasPrefix(cond, kubeoperav1alpha1.ConditionReady+"=") || strings.HasPrefix(cond, kubeoperav1alpha1.ConditionSynced+"=")) {
			label += " " + cond
		}
		out = append(out, label)
	}
	return out
}

// TestPassesThatChangeNothingReadTheStatusBack: once a full pass applied everything, a pass
// with the same inputs reads the GitRepository, the Kustomization and the Deployment back and
// ends: no Git fetch, no other vCluster read, no vCluster write. What it finds changed or failing
// makes it a full pass, which repairs: a Kustomization spec the tenant edited (another
// generation), a failure Flux reports after the tenant deleted the ServiceAccount it applies as.
// A changed input (an annotation) makes a full pass too.
func TestPassesThatChangeNothingReadTheStatusBack(t *testing.T) {
	f, a := newAppWaitingForFlux(t, "calm")
	name := f.ns + "-calm"
	ksPath := "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/" + name
	repoPath := "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/" + name
	deployPath := "/apis/apps/v1/namespaces/calm/deployments/calm"
	saPath := "/api/v1/namespaces/flux-system/serviceaccounts/" + name

	fetches := gitServer.Fetches(f.repo)
	mark := vclusterRequests.mark()
	f.fluxApplied("calm", a.Status.Commit)
	f.waitCondition("calm", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	// Objects only: the vCluster's REST mapper reads a group-version's discovery document the
	// first time it is asked about one (apps/v1 here, the Deployment's).
	objectsRead := slices.DeleteFunc(mapKeys(vclusterRequests.readsSince(mark)), func(p string) bool { return !strings.Contains(p, "/namespaces/") })
	f.g.Expect(objectsRead).To(ConsistOf(ksPath, repoPath, deployPath), "what the passes read in the vCluster")
	f.g.Expect(vclusterRequests.writesSince(mark)).To(BeEmpty(), "what the passes wrote in the vCluster")
	f.g.Expect(gitServer.Fetches(f.repo)).To(Equal(fetches), "Git fetches")

	// The tenant edits the Kustomization: its next generation makes the pass a full one.
	ks := &kustomizev1.Kustomization{}
	f.g.Expect(f.vc(ks, "flux-system", name)).To(BeTrue())
	ks.Spec.Prune = false
	f.g.Expect(vcluster.Client.Update(f.ctx, ks)).To(Succeed())
	f.g.Eventually(func() bool {
		f.g.Expect(f.vc(ks, "flux-system", name)).To(BeTrue())
		return ks.Spec.Prune
	}).Should(BeTrue(), "the edit is taken back without a poke")

	// The tenant deletes the ServiceAccount the Kustomization applies as, and Flux fails.
	f.g.Expect(vcluster.Client.Delete(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name}})).To(Succeed())
	setKustomizationStatus(f, name, "main@sha1:"+a.Status.Commit, metav1.ConditionFalse, "ReconciliationFailed", "serviceaccount not found")
	f.g.Eventually(func() bool { return f.vc(&corev1.ServiceAccount{}, "flux-system", name) }).Should(BeTrue(), "the ServiceAccount is back without a poke")
	setKustomizationStatus(f, name, "main@sha1:"+a.Status.Commit, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied")
	f.waitCondition("calm", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)

	// A changed input: a full pass, which reads what it applies.
	mark = vclusterRequests.mark()
	f.pokeAndWait("calm")
	f.g.Eventually(func() int { return vclusterRequests.readsSince(mark)[saPath] }).Should(BeNumerically(">=", 1), "the full pass compared the ServiceAccount")
}

func TestSyncedAppInSteadyStateWritesNothing(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(registrySecret(f.ns, "pull", dockerConfig))
	f.create(f.newApp("quiet", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "pull"}}
	}))
	a := f.waitReady("quiet")
	name := f.ns + "-quiet"
	setKustomizationStatus(f, name, "main@sha1:"+a.Status.Commit, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied")
	f.poke("quiet")
	a = f.waitCondition("quiet", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	// The history is in the status the passes below leave alone.
	f.g.Expect(a.Status.History).To(HaveLen(1))
	f.g.Expect(a.Status.History[0].AppliedAt).NotTo(BeNil())
	commits := len(f.commits())

	ksPath := "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/" + name
	for pass := range 3 {
		hostRequests.reset()
		vclusterRequests.reset()
		f.poke("quiet") // the test's write, not the reconciler's: its client is not counted
		// The pass ran: it read the Kustomization back.
		f.g.Eventually(func() int { return vclusterRequests.reads(ksPath) }).Should(BeNumerically(">=", 1), "pass %d", pass)
		f.g.Consistently(func() map[string]int {
			return mergeCounts(hostRequests.writes("/namespaces/"+f.ns+"/"), vclusterRequests.writes("/"))
		}, time.Second, 100*time.Millisecond).Should(BeEmpty(), "pass %d wrote to an API server", pass)
	}
	f.g.Expect(f.commits()).To(HaveLen(commits), "a steady-state pass pushed")

	// A field another actor changes is taken back (the compare is against the owned fields).
	ks := &kustomizev1.Kustomization{}
	f.g.Expect(f.vc(ks, "flux-system", name)).To(BeTrue())
	ks.Spec.Prune = false
	f.g.Expect(vcluster.Client.Update(f.ctx, ks)).To(Succeed())
	f.poke("quiet")
	f.g.Eventually(func() bool {
		f.g.Expect(f.vc(ks, "flux-system", name)).To(BeTrue())
		return ks.Spec.Prune
	}).Should(BeTrue())
}

func mergeCounts(maps ...map[string]int) map[string]int {
	out := map[string]int{}
	for _, m := range maps {
		for k, v := range m {
			out[k] += v
		}
	}
	return out
}

func TestAvailableReplicasAreReadFromTheVCluster(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("counted", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Replicas = ptr.To[int32](2) }))
	a := f.waitReady("counted")
	f.g.Expect(a.Status.AvailableReplicas).To(BeZero(), "nothing applied yet")
	ks := &kustomizev1.Kustomization{}
	f.g.Expect(f.vc(ks, "flux-system", f.ns+"-counted")).To(BeTrue())
	f.g.Expect(ks.Spec.Wait).To(BeTrue(), "Flux must wait for the applied objects' health")

	// What Flux applies (the committed Deployment), then what the deployment controller writes
	// once both pods are available, and last what kustomize-controller writes once it applied
	// the commit: envtest runs none of them, so the test writes exactly that.
	deploy := render.Deployment(a)
	f.g.Expect(vcluster.Client.Create(f.ctx, deploy)).To(Succeed())
	deploy.Status = appsv1.DeploymentStatus{
		ObservedGeneration: deploy.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
		},
	}
	f.g.Expect(vcluster.Client.Status().Update(f.ctx, deploy)).To(Succeed())
	// While the Kustomization has applied nothing, a Deployment of that name is not the app's:
	// the pass does not even read it.
	f.pokeAndWait("counted")
	f.g.Expect(f.get("counted").Status.AvailableReplicas).To(BeZero(), "a Deployment Flux did not apply")
	setKustomizationStatus(f, f.ns+"-counted", "main@sha1:"+a.Status.Commit, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied")
	f.poke("counted")
	f.g.Eventually(func() int32 { return f.get("counted").Status.AvailableReplicas }).Should(Equal(int32(2)))
}

// setGitRepositoryReady writes the Ready condition source-controller would write.
func setGitRepositoryReady(f *fixture, name string, ready metav1.ConditionStatus, reason, message string) {
	f.t.Helper()
	repo := &sourcev1.GitRepository{}
	writeFluxStatus(f, repo, name, func() {
		repo.Status.ObservedGeneration = repo.Generation
		repo.Status.Conditions = fluxReady(repo.Generation, ready, reason, message)
	})
}

// A source that cannot fetch is what keeps the commit from the vCluster: Synced says so with the
// GitRepository's own words (SourceNotReady), not "waiting for Flux", although the Kustomization
// is still Ready at the revision it applied before. Once the source fetches again, the wait is for
// the Kustomization. The status source-controller writes is played here (no Flux in this suite);
// test/e2e revokes a read credential under the real source-controller.
func TestSyncedSaysWhenTheSourceCannotFetch(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("fetch", "t1"))
	a := f.waitReady("fetch")
	name := f.ns + "-fetch"
	older := "main@sha1:" + a.Status.Commit
	setKustomizationStatus(f, name, older, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: "+older)

	// A new commit; the read credential was revoked meanwhile.
	f.update("fetch", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Replicas = ptr.To(int32(2)) })
	f.waitCondition("fetch", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied)
	setGitRepositoryReady(f, name, metav1.ConditionFalse, "GitOperationFailed",
		"failed to checkout and determine revision: unable to clone '"+f.gitURL()+"': authentication required")
	f.poke("fetch")
	a = f.waitCondition("fetch", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonSourceNotReady)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionSynced)).To(ContainSubstring("cannot fetch (GitOperationFailed): failed to checkout"))
	f.g.Expect(apimeta.IsStatusConditionTrue(a.Status.Conditions, kubeoperav1alpha1.ConditionReady)).To(BeTrue(), "the operator's part is done")

	// The credential works again: the wait is Flux's.
	setGitRepositoryReady(f, name, metav1.ConditionTrue, "Succeeded", "stored artifact for revision")
	f.poke("fetch")
	f.waitCondition("fetch", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied)
}
