package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
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
