package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// kstatus is what kstatus (the library behind Flux health checks and cli-utils' apply status)
// computes for the app as the API server returns it.
func (f *fixture) kstatus(g Gomega, name string) (*status.Result, *unstructured.Unstructured) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kubeoperav1alpha1.GroupVersion.WithKind("KubeOperaApp"))
	g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, u)).To(Succeed())
	res, err := status.Compute(u)
	g.Expect(err).NotTo(HaveOccurred())
	return res, u
}

// waitKstatus waits until kstatus reports want for the app, and returns the app.
func (f *fixture) waitKstatus(name string, want status.Status) *kubeoperav1alpha1.KubeOperaApp {
	f.t.Helper()
	f.g.Eventually(func(g Gomega) {
		res, u := f.kstatus(g, name)
		g.Expect(res.Status).To(Equal(want), "kstatus of %s: %s (conditions %v)", name, res.Message, u.Object["status"])
	}).Should(Succeed())
	return f.get(name)
}

// The three outcome classes as kstatus reads them from the API server, with the reconciler of
// the suite: an app committed but not yet applied by Flux, and one whose push is refused and
// retried, are InProgress; one refused for good is Failed; a synced app is Current, and a spec
// change makes it InProgress again until Flux applies the new commit. observedGeneration moves
// only when a generation is fully processed (Synced or Stalled).
func TestKstatusReportsEachOutcome(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())

	t.Run("progressing then ready", func(t *testing.T) {
		f.create(f.newApp("web", "t1"))
		f.waitReady("web")
		a := f.waitKstatus("web", status.InProgressStatus)
		rec := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReconciling)
		f.g.Expect(rec).NotTo(BeNil())
		f.g.Expect(rec.Reason).To(Equal(kubeoperav1alpha1.ReasonRevisionNotApplied))
		f.g.Expect(a.Status.ObservedGeneration).To(BeZero(), "not synced yet: generation 1 is not fully processed")

		setKustomizationStatus(f, f.ns+"-web", "main@sha1:"+a.Status.Commit, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied")
		f.poke("web")
		a = f.waitKstatus("web", status.CurrentStatus)
		f.g.Expect(a.Status.ObservedGeneration).To(Equal(a.Generation))
		f.g.Expect(apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReconciling)).To(BeNil())
		f.g.Expect(apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionStalled)).To(BeNil())

		// A new generation is InProgress until Flux applied its commit.
		f.update("web", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Replicas = ptr.To(int32(3)) })
		f.g.Eventually(func(g Gomega) {
			res, _ := f.kstatus(g, "web")
			g.Expect(res.Status).To(Equal(status.InProgressStatus))
			cur := f.get("web")
			g.Expect(cur.Status.Commit).NotTo(Equal(a.Status.Commit), "the new generation is committed")
			g.Expect(cur.Status.ObservedGeneration).To(Equal(a.Generation), "the new generation is not fully processed")
		}).Should(Succeed())
		cur := f.get("web")
		setKustomizationStatus(f, f.ns+"-web", "main@sha1:"+cur.Status.Commit, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied")
		f.poke("web")
		a = f.waitKstatus("web", status.CurrentStatus)
		f.g.Expect(a.Status.ObservedGeneration).To(Equal(a.Generation))
		f.g.Expect(a.Generation).To(BeNumerically(">", 1))
	})

	t.Run("retried failure is in progress", func(t *testing.T) {
		f.create(&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "wrong-creds"},
			Data:       map[string][]byte{"username": []byte("git"), "password": []byte("wrong-p4ssw0rd")},
		})
		f.create(f.newApp("locked-out", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.SecretRef.Name = "wrong-creds"
		}))
		f.waitCondition("locked-out", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitAuthFailed)
		a := f.waitKstatus("locked-out", status.InProgressStatus)
		rec := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReconciling)
		f.g.Expect(rec).NotTo(BeNil())
		f.g.Expect(rec.Reason).To(Equal(kubeoperav1alpha1.ReasonProgressingWithRetry))
		f.g.Expect(rec.Message).To(Equal(conditionMessage(a, kubeoperav1alpha1.ConditionReady)))
		f.g.Expect(rec.Message).NotTo(ContainSubstring("wrong-p4ssw0rd"))
		f.g.Expect(apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionStalled)).To(BeNil())
		f.g.Expect(a.Status.ObservedGeneration).To(BeZero())

		// The right credentials: the retry succeeds and the app goes on to wait for Flux.
		f.update("locked-out", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.SecretRef.Name = gitSecret })
		f.waitReady("locked-out")
		a = f.waitKstatus("locked-out", status.InProgressStatus)
		f.g.Expect(apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReconciling).Reason).
			To(Equal(kubeoperav1alpha1.ReasonRevisionNotApplied))
	})

	t.Run("terminal failure is failed", func(t *testing.T) {
		err := apptest.CreateTenant(f.ctx, host.Client,
			f.tenant("foreign", testfixture.TenantCloudSpace("another-cloudspace"), testfixture.TenantReady(time.Now())))
		f.g.Expect(err).NotTo(HaveOccurred())
		f.g.Expect(host.Client.Create(f.ctx, apptest.KubeconfigSecret(f.ns, "vc-foreign", vclusterKubeconfig))).To(Succeed())
		f.create(f.newApp("intruder", "foreign"))
		a := f.waitKstatus("intruder", status.FailedStatus)
		st := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionStalled)
		f.g.Expect(st).NotTo(BeNil())
		f.g.Expect(st.Reason).To(Equal(kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch))
		f.g.Expect(st.Message).To(Equal(conditionMessage(a, kubeoperav1alpha1.ConditionReady)))
		f.g.Expect(apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionReconciling)).To(BeNil())
		f.g.Expect(a.Status.ObservedGeneration).To(Equal(a.Generation), "a stalled generation is fully processed")
	})
}
