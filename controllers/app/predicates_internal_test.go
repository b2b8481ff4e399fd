package app

import (
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
)

// kustomization is a Kustomization at generation gen whose status is Flux's last write: the
// applied revision and the Ready condition (no condition when ready is "").
func kustomization(gen, observed int64, applied string, ready metav1.ConditionStatus, reason, message string) *kustomizev1.Kustomization {
	ks := &kustomizev1.Kustomization{}
	ks.Namespace, ks.Name, ks.Generation = "flux-system", "ns-web", gen
	ks.Status.ObservedGeneration = observed
	ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision = applied, applied
	if ready != "" {
		ks.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: ready, Reason: reason, Message: message,
			LastTransitionTime: metav1.Now(), ObservedGeneration: observed}}
	}
	return ks
}

// The sequence kustomize-controller writes: Ready=Unknown (Progressing) when a reconcile starts,
// then the outcome. Only a first sight, a new generation, a new applied revision or a new final
// outcome reach the app.
func TestKustomizationFilterPassesOnOnlyWhatAPassReads(t *testing.T) {
	const rev1, rev2 = "main@sha1:1111111111111111111111111111111111111111", "main@sha1:2222222222222222222222222222222222222222"
	applied := func(rev string) string { return "Applied revision: " + rev }
	steps := []struct {
		name string
		ks   *kustomizev1.Kustomization
		want bool
	}{
		{"created, no status yet", kustomization(1, 0, "", "", "", ""), true},
		{"first reconcile starts", kustomization(1, 0, "", metav1.ConditionUnknown, "Progressing", "Reconciliation in progress"), false},
		{"first revision applied", kustomization(1, 1, rev1, metav1.ConditionTrue, "ReconciliationSucceeded", applied(rev1)), true},
		{"periodic reconcile starts", kustomization(1, 1, rev1, metav1.ConditionUnknown, "Progressing", "Reconciliation in progress"), false},
		{"periodic reconcile ends as before", kustomization(1, 1, rev1, metav1.ConditionTrue, "ReconciliationSucceeded", applied(rev1)), false},
		{"next periodic reconcile starts", kustomization(1, 1, rev1, metav1.ConditionUnknown, "Progressing", "Reconciliation in progress"), false},
		{"it fails", kustomization(1, 1, rev1, metav1.ConditionFalse, "HealthCheckFailed", "Deployment/web not ready"), true},
		{"retry starts", kustomization(1, 1, rev1, metav1.ConditionUnknown, "Progressing", "Reconciliation in progress"), false},
		{"it fails the same way", kustomization(1, 1, rev1, metav1.ConditionFalse, "HealthCheckFailed", "Deployment/web not ready"), false},
		{"it fails another way", kustomization(1, 1, rev1, metav1.ConditionFalse, "ReconciliationFailed", "dry-run failed"), true},
		{"new revision applied", kustomization(1, 1, rev2, metav1.ConditionTrue, "ReconciliationSucceeded", applied(rev2)), true},
		{"spec changed", kustomization(2, 1, rev2, metav1.ConditionTrue, "ReconciliationSucceeded", applied(rev2)), true},
		{"new spec's reconcile starts", kustomization(2, 1, rev2, metav1.ConditionUnknown, "Progressing", "Reconciliation in progress"), false},
		{"new spec applied, same revision", kustomization(2, 2, rev2, metav1.ConditionTrue, "ReconciliationSucceeded", applied(rev2)), true},
	}
	f := newKustomizationFilter()
	for _, s := range steps {
		if got := f.worthAPass(s.ks); got != s.want {
			t.Errorf("%s: passed on %v, want %v", s.name, got, s.want)
		}
	}

	// A deleted Kustomization is forgotten: one of the same name is new again.
	g := NewWithT(t)
	last := steps[len(steps)-1].ks
	f.deleted(last)
	g.Expect(f.worthAPass(last.DeepCopy())).To(BeTrue())
}

func TestTenantPredicatePassesOnWhatResolvingReads(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func() *tenantv1alpha1.Tenant {
		tn := &tenantv1alpha1.Tenant{}
		tn.Namespace, tn.Name, tn.Generation = "ns", "t1", 1
		tn.Labels = map[string]string{tenantv1alpha1.CloudSpaceLabel: "cs"}
		tn.Status.Conditions = []metav1.Condition{{Type: tenantv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			Reason: "Ready", Message: "vCluster is up", LastTransitionTime: metav1.NewTime(since), ObservedGeneration: 1}}
		return tn
	}
	cases := []struct {
		name   string
		mutate func(*tenantv1alpha1.Tenant)
		want   bool
	}{
		{"Ready's message", func(tn *tenantv1alpha1.Tenant) { tn.Status.Conditions[0].Message = "still up" }, false},
		{"Ready's observed generation", func(tn *tenantv1alpha1.Tenant) { tn.Status.Conditions[0].ObservedGeneration = 2 }, false},
		{"another condition", func(tn *tenantv1alpha1.Tenant) {
			tn.Status.Conditions = append(tn.Status.Conditions, metav1.Condition{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading"})
		}, false},
		{"another label", func(tn *tenantv1alpha1.Tenant) { tn.Labels["team"] = "a" }, false},
		{"an annotation", func(tn *tenantv1alpha1.Tenant) { tn.Annotations = map[string]string{"note": "x"} }, false},
		{"the spec (generation)", func(tn *tenantv1alpha1.Tenant) { tn.Generation = 2 }, true},
		{"the CloudSpace label", func(tn *tenantv1alpha1.Tenant) { tn.Labels[tenantv1alpha1.CloudSpaceLabel] = "other" }, true},
		{"Ready turns False", func(tn *tenantv1alpha1.Tenant) { tn.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
		{"Ready since another time", func(tn *tenantv1alpha1.Tenant) {
			tn.Status.Conditions[0].LastTransitionTime = metav1.NewTime(since.Add(time.Minute))
		}, true},
		{"deletion", func(tn *tenantv1alpha1.Tenant) { now := metav1.Now(); tn.DeletionTimestamp = &now }, true},
		{"the kubeconfig Secret", func(tn *tenantv1alpha1.Tenant) {
			tn.Status.KubeconfigSecretRef = &tenantv1alpha1.KubeconfigSecretReference{Name: "exported"}
		}, true},
		{"the kubeconfig Secret's key", func(tn *tenantv1alpha1.Tenant) {
			tn.Status.KubeconfigSecretRef = &tenantv1alpha1.KubeconfigSecretReference{Name: "vc-t1", Key: "admin"}
		}, true},
		{"the default kubeconfig Secret named explicitly", func(tn *tenantv1alpha1.Tenant) {
			tn.Status.KubeconfigSecretRef = &tenantv1alpha1.KubeconfigSecretReference{Name: "vc-t1"}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := base()
			c.mutate(n)
			got := tenantChanged.Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: n})
			NewWithT(t).Expect(got).To(Equal(c.want))
		})
	}
}
