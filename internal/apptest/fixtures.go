package apptest

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
)

// CreateTenant creates the Tenant t, then writes the status conditions t was built with
// through the status subresource, as the tenant-controller does (the API server drops the status
// of a create). The written conditions record the generation the create gave t, and their
// transition times are truncated to the second, the precision the API server stores. A Tenant
// without conditions is only created. t is updated to what the API server stored.
func CreateTenant(ctx context.Context, c client.Client, t *tenantv1alpha1.Tenant) error {
	// Kept aside: the create decodes the API server's answer, which has no status, into t.
	conditions := slices.Clone(t.Status.Conditions)
	if err := c.Create(ctx, t); err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	if len(conditions) == 0 {
		return nil
	}
	for i := range conditions {
		conditions[i].LastTransitionTime = metav1.NewTime(conditions[i].LastTransitionTime.Truncate(time.Second))
		conditions[i].ObservedGeneration = t.Generation
	}
	t.Status.Conditions = conditions
	if err := c.Status().Update(ctx, t); err != nil {
		return fmt.Errorf("update tenant status: %w", err)
	}
	return nil
}

// SetTenantReady sets the Tenant's Ready condition.
func SetTenantReady(ctx context.Context, c client.Client, t *tenantv1alpha1.Tenant, ready bool, since time.Time) error {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	t.Status.Conditions = []metav1.Condition{{
		Type: tenantv1alpha1.ConditionReady, Status: status, Reason: "Test", Message: "set by the test",
		LastTransitionTime: metav1.NewTime(since.Truncate(time.Second)), ObservedGeneration: t.Generation,
	}}
	if err := c.Status().Update(ctx, t); err != nil {
		return fmt.Errorf("update tenant status: %w", err)
	}
	return nil
}

// KubeconfigSecret is a vcluster-style exported kubeconfig Secret.
func KubeconfigSecret(ns, name string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "vcluster"}},
		Data:       map[string][]byte{"config": kubeconfig},
	}
}

// Namespace creates a namespace named from prefix.
func Namespace(ctx context.Context, c client.Client, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(ctx, ns); err != nil {
		return "", fmt.Errorf("create namespace: %w", err)
	}
	return ns.Name, nil
}
