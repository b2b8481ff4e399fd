package testfixture

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
)

// TenantReadySince is when the Tenant that Tenant builds became Ready.
var TenantReadySince = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TenantMod changes a Tenant that Tenant makes; mods apply in order, so a later one overrides an
// earlier one. It is an alias, so a test's own func(*Tenant) is a TenantMod as it stands.
type TenantMod = func(*tenantv1alpha1.Tenant)

// Tenant is the Tenant that KubeOperaApp's app names: TenantName in AppNamespace, of CloudSpace
// CloudSpaceID (label and spec), Ready since TenantReadySince; then mods are applied in order.
func Tenant(mods ...TenantMod) *tenantv1alpha1.Tenant {
	t := &tenantv1alpha1.Tenant{
		ObjectMeta: metav1.ObjectMeta{Namespace: AppNamespace, Name: TenantName},
	}
	for _, m := range append([]TenantMod{TenantCloudSpace(CloudSpaceID), TenantReady(TenantReadySince)}, mods...) {
		m(t)
	}
	return t
}

// TenantNamed sets the Tenant's name.
func TenantNamed(name string) TenantMod {
	return func(t *tenantv1alpha1.Tenant) { t.Name = name }
}

// TenantInNamespace sets the Tenant's namespace.
func TenantInNamespace(ns string) TenantMod {
	return func(t *tenantv1alpha1.Tenant) { t.Namespace = ns }
}

// TenantCloudSpace sets the Tenant's CloudSpace: its kubeopera.io/cloudspace-id label and
// spec.cloudSpaceId. Empty removes both: a Tenant of no CloudSpace.
func TenantCloudSpace(id string) TenantMod {
	return func(t *tenantv1alpha1.Tenant) {
		t.Spec.CloudSpaceID = id
		if id == "" {
			delete(t.Labels, tenantv1alpha1.CloudSpaceLabel)
			if len(t.Labels) == 0 {
				t.Labels = nil
			}
			return
		}
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		t.Labels[tenantv1alpha1.CloudSpaceLabel] = id
	}
}

// TenantReady makes the Tenant Ready since since (its only condition).
func TenantReady(since time.Time) TenantMod {
	return readyCondition(metav1.ConditionTrue, since)
}

// TenantNotReady makes the Tenant not Ready since since (its only condition).
func TenantNotReady(since time.Time) TenantMod {
	return readyCondition(metav1.ConditionFalse, since)
}

// TenantWithoutConditions removes the Tenant's status conditions: a Tenant the tenant-controller
// has not reported on yet, neither Ready nor not Ready.
func TenantWithoutConditions() TenantMod {
	return func(t *tenantv1alpha1.Tenant) { t.Status.Conditions = nil }
}

func readyCondition(status metav1.ConditionStatus, since time.Time) TenantMod {
	return func(t *tenantv1alpha1.Tenant) {
		t.Status.Conditions = []metav1.Condition{{
			Type: tenantv1alpha1.ConditionReady, Status: status, Reason: "Test", LastTransitionTime: metav1.NewTime(since),
		}}
	}
}
