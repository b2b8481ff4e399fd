package app_test

import (
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
)

// Flux's status change on the vCluster's Kustomization brings the app back at once: the suite
// polls every hour (suiteOptions.SyncPollInterval) and the test never pokes the app, so only the
// Kustomization watch can turn Synced green. The watch goes with the Tenant's client.
func TestKustomizationStatusChangeEnqueuesTheApp(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("watched", "t1"))
	a := f.waitReady("watched")
	name := f.ns + "-watched"
	f.g.Expect(findCondition(a, kubeoperav1alpha1.ConditionSynced).Status).NotTo(Equal(metav1.ConditionTrue),
		"nothing applied the commit yet")
	f.g.Expect(reconciler.WatchesKustomizations(f.ns, "t1")).To(BeTrue())
	// One REST mapper per vCluster: the watches map kinds with the client's, whose discovery the
	// client has read already (make bench P5: two mappers per vCluster held 15.5 MB of a 39 MB
	// live heap at 30 vClusters).
	f.g.Expect(reconciler.WatchesMapWithTheClientsMapper(f.ns, "t1")).To(BeTrue())

	// Flux fails to apply: the app reports it without a poke.
	setKustomizationStatus(f, name, "", metav1.ConditionFalse, "ReconciliationFailed", "Deployment/watched dry-run failed")
	f.waitCondition("watched", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationNotReady)

	// Flux applies the pushed commit.
	setKustomizationStatus(f, name, "main@sha1:"+a.Status.Commit, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: main@sha1:"+a.Status.Commit)
	a = f.waitCondition("watched", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Expect(a.Status.AppliedRevision).To(Equal("main@sha1:" + a.Status.Commit))

	// The last app of the Tenant goes: its client and its watch are dropped.
	f.deleteApp("watched")
	f.waitGone("watched")
	f.g.Eventually(func() bool { return reconciler.WatchesKustomizations(f.ns, "t1") }).Should(BeFalse())
}

// A vCluster whose Flux CRDs arrive after the operator first built its client: the Kustomization
// watch that could not start then is retried, so once Flux is installed its status change
// reaches the app without a poll (an hour in the suite) and without a poke. Before, the failed
// watch was logged once and never tried again.
func TestKustomizationWatchStartsOnceTheFluxCRDsAreInstalled(t *testing.T) {
	requireSuite(t)
	fluxCRDs, err := apptest.FluxCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	// A vCluster of its own, without the Flux CRDs.
	bare, kubeconfig := ownVCluster(t, "vcluster without Flux")
	f := newFixture(t)
	f.addTenantIn("bare", kubeconfig)

	f.create(f.newApp("early", "bare"))
	f.waitCondition("early", kubeoperav1alpha1.ConditionFluxConfigured, metav1.ConditionFalse, kubeoperav1alpha1.ReasonFluxConfigFailed)
	_, err = envtest.InstallCRDs(bare.Config, envtest.CRDInstallOptions{Paths: []string{fluxCRDs}})
	f.g.Expect(err).NotTo(HaveOccurred())
	a := f.waitReady("early")
	f.g.Expect(findCondition(a, kubeoperav1alpha1.ConditionSynced).Status).NotTo(Equal(metav1.ConditionTrue))

	// Flux applies the commit: only the watch can tell the app.
	revision := "main@sha1:" + a.Status.Commit
	f.g.Eventually(func() error {
		ks := &kustomizev1.Kustomization{}
		if err := bare.Client.Get(f.ctx, client.ObjectKey{Namespace: "flux-system", Name: f.ns + "-early"}, ks); err != nil {
			return err
		}
		ks.Status.ObservedGeneration = ks.Generation
		ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision = revision, revision
		ks.Status.Conditions = []metav1.Condition{{
			Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded",
			Message: "Applied revision: " + revision, LastTransitionTime: metav1.Now(), ObservedGeneration: ks.Generation,
		}}
		return bare.Client.Status().Update(f.ctx, ks)
	}).Should(Succeed())
	f.waitCondition("early", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
}
