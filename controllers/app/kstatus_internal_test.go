package app

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// kstatusOf is what kstatus (Flux health checks, cli-utils) computes for the app.
func kstatusOf(t *testing.T, app *kubeoperav1alpha1.KubeOperaApp) *status.Result {
	t.Helper()
	app = app.DeepCopy()
	app.APIVersion, app.Kind = kubeoperav1alpha1.GroupVersion.String(), "KubeOperaApp"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(app)
	if err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Every way a pass can end, as summarize reads it, and what kstatus then reports. The app is at
// generation 3 and was fully processed at generation 2.
func TestSummarizeForKstatus(t *testing.T) {
	cond := func(condType string, s metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: condType, Status: s, Reason: reason, Message: message, ObservedGeneration: 3}
	}
	readyTrue := cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, "Manifests committed")
	syncedTrue := cond(kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded, "Flux applied main@sha1:abc")
	gitAuth := cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitAuthFailed, "push: authentication required")
	mismatch := cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch, "Tenant t1 belongs to another CloudSpace")
	errAuth := errors.New("push: authentication required")

	cases := []struct {
		name       string
		conditions []metav1.Condition
		deleting   bool
		err        error
		want       status.Status
		// wantCondition is the kstatus condition set (Reconciling or Stalled), with its reason.
		wantCondition, wantReason, wantMessage string
		// wantObserved: observedGeneration moves to 3 (the generation was fully processed).
		wantObserved bool
	}{{
		name:       "ready and synced is Current",
		conditions: []metav1.Condition{readyTrue, syncedTrue},
		want:       status.CurrentStatus, wantObserved: true,
	}, {
		name:       "a retried step failure is InProgress",
		conditions: []metav1.Condition{gitAuth},
		err:        outcome.Retry(kubeoperav1alpha1.ReasonGitAuthFailed, errAuth),
		want:       status.InProgressStatus, wantCondition: kubeoperav1alpha1.ConditionReconciling,
		wantReason: kubeoperav1alpha1.ReasonProgressingWithRetry, wantMessage: gitAuth.Message,
	}, {
		name:       "a terminal failure is Failed",
		conditions: []metav1.Condition{mismatch},
		err:        outcome.Stop(kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch, errors.New("x")),
		want:       status.FailedStatus, wantCondition: kubeoperav1alpha1.ConditionStalled,
		wantReason: kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch, wantMessage: mismatch.Message, wantObserved: true,
	}, {
		name:       "a terminal error not reported on Ready is Failed with its own reason",
		conditions: []metav1.Condition{readyTrue, syncedTrue},
		err:        outcome.Stop(kubeoperav1alpha1.ReasonInvalidSpec, errors.New("env[0].name: invalid")),
		want:       status.FailedStatus, wantCondition: kubeoperav1alpha1.ConditionStalled,
		wantReason: kubeoperav1alpha1.ReasonInvalidSpec, wantMessage: "env[0].name: invalid", wantObserved: true,
	}, {
		name:       "a host API error on a synced app is InProgress, not Current",
		conditions: []metav1.Condition{readyTrue, syncedTrue},
		err:        errors.New("patch finalizer: connection refused"),
		want:       status.InProgressStatus, wantCondition: kubeoperav1alpha1.ConditionReconciling,
		wantReason: kubeoperav1alpha1.ReasonProgressingWithRetry, wantMessage: "patch finalizer: connection refused",
	}, {
		name: "a wait for the Tenant is InProgress",
		conditions: []metav1.Condition{cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse,
			kubeoperav1alpha1.ReasonTenantAPIUnavailable, "the Tenant API is not served")},
		err:  outcome.Wait(kubeoperav1alpha1.ReasonTenantAPIUnavailable, time.Minute, "the Tenant API is not served"),
		want: status.InProgressStatus, wantCondition: kubeoperav1alpha1.ConditionReconciling,
		wantReason: kubeoperav1alpha1.ReasonTenantAPIUnavailable, wantMessage: "the Tenant API is not served",
	}, {
		name: "committed but not applied by Flux is InProgress",
		conditions: []metav1.Condition{readyTrue, cond(kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse,
			kubeoperav1alpha1.ReasonRevisionNotApplied, "Waiting for Flux to apply main@sha1:abc")},
		want: status.InProgressStatus, wantCondition: kubeoperav1alpha1.ConditionReconciling,
		wantReason: kubeoperav1alpha1.ReasonRevisionNotApplied, wantMessage: "Waiting for Flux to apply main@sha1:abc",
	}, {
		name:       "committed with no read-back yet is InProgress",
		conditions: []metav1.Condition{readyTrue},
		want:       status.InProgressStatus, wantCondition: kubeoperav1alpha1.ConditionReconciling,
		wantReason: kubeoperav1alpha1.ReasonProgressing, wantMessage: "Waiting for Flux to apply the manifests",
	}, {
		name:       "the first pass, before any step reported, is InProgress",
		conditions: nil,
		want:       status.InProgressStatus, wantCondition: kubeoperav1alpha1.ConditionReconciling,
		wantReason: kubeoperav1alpha1.ReasonProgressing, wantMessage: "Reconciling",
	}, {
		name: "a deletion waiting for Flux is Terminating",
		conditions: []metav1.Condition{cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse,
			kubeoperav1alpha1.ReasonDeleting, "Waiting for Kustomization x to be deleted")},
		deleting: true,
		want:     status.TerminatingStatus, wantCondition: kubeoperav1alpha1.ConditionReconciling,
		wantReason: kubeoperav1alpha1.ReasonDeleting, wantMessage: "Waiting for Kustomization x to be deleted",
	}, {
		name: "a deletion stuck past its timeout is Stalled",
		conditions: []metav1.Condition{cond(kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse,
			kubeoperav1alpha1.ReasonKustomizationStuck, "Kustomization x is still being deleted")},
		deleting: true,
		want:     status.TerminatingStatus, wantCondition: kubeoperav1alpha1.ConditionStalled,
		wantReason: kubeoperav1alpha1.ReasonKustomizationStuck, wantMessage: "Kustomization x is still being deleted",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			app := testfixture.KubeOperaApp(testfixture.AppInNamespace("cs"), testfixture.AppGeneration(3),
				func(a *kubeoperav1alpha1.KubeOperaApp) {
					a.Status = kubeoperav1alpha1.KubeOperaAppStatus{ObservedGeneration: 2, Conditions: tc.conditions}
				})
			// What an earlier pass left: the opposite kstatus condition, to be replaced.
			apimeta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
				Type: kubeoperav1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "Old", Message: "old",
			})
			if tc.wantCondition == kubeoperav1alpha1.ConditionStalled {
				apimeta.RemoveStatusCondition(&app.Status.Conditions, kubeoperav1alpha1.ConditionStalled)
				apimeta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
					Type: kubeoperav1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "Old", Message: "old",
				})
			}
			if tc.deleting {
				now := metav1.Now()
				app.DeletionTimestamp = &now
				app.Finalizers = []string{kubeoperav1alpha1.Finalizer}
			}

			summarize(app, tc.err)

			g.Expect(kstatusOf(t, app).Status).To(Equal(tc.want))
			for _, condType := range []string{kubeoperav1alpha1.ConditionReconciling, kubeoperav1alpha1.ConditionStalled} {
				c := apimeta.FindStatusCondition(app.Status.Conditions, condType)
				if condType != tc.wantCondition {
					g.Expect(c).To(BeNil(), "%s left over", condType)
					continue
				}
				g.Expect(c).NotTo(BeNil(), "no %s", condType)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(Equal(tc.wantReason))
				g.Expect(c.Message).To(Equal(tc.wantMessage))
				g.Expect(c.ObservedGeneration).To(Equal(int64(3)))
			}
			if tc.wantObserved {
				g.Expect(app.Status.ObservedGeneration).To(Equal(int64(3)))
			} else {
				g.Expect(app.Status.ObservedGeneration).To(Equal(int64(2)), "a generation still worked on is not observed")
			}

			// A second identical pass changes nothing: no status write for a repeated outcome.
			again := app.DeepCopy()
			summarize(again, tc.err)
			g.Expect(again.Status).To(Equal(app.Status))
		})
	}
}
