package apptest

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// CreateTenant creates a Tenant of CloudSpace cloudSpace in ns. readySince non-zero makes it
// Ready since then (status written through the status subresource, as the tenant-controller
// does).
func CreateTenant(ctx context.Context, c client.Client, ns, name, cloudSpace string, readySince time.Time) (*tenantv1alpha1.Tenant, error) {
	t := &tenantv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if cloudSpace != "" {
		t.Labels = map[string]string{tenantv1alpha1.CloudSpaceLabel: cloudSpace}
		t.Spec.CloudSpaceID = cloudSpace
	}
	if err := c.Create(ctx, t); err != nil {
		return nil, fmt.Errorf("create tenant: %w", err)
	}
	if readySince.IsZero() {
		return t, nil
	}
	return t, SetTenantReady(ctx, c, t, true, readySince)
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

// App builds a KubeOperaApp with one HTTP port, changed by mods.
func App(ns, name, cloudSpace, gitURL string, mods ...func(*kubeoperav1alpha1.KubeOperaApp)) *kubeoperav1alpha1.KubeOperaApp {
	a := &kubeoperav1alpha1.KubeOperaApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kubeoperav1alpha1.KubeOperaAppSpec{
			CloudSpaceID: cloudSpace,
			App: kubeoperav1alpha1.AppSpec{
				Image:    "ghcr.io/example/" + name + ":1.0.0",
				Replicas: ptr.To[int32](1),
				Ports:    []kubeoperav1alpha1.AppPort{{Name: "http", ContainerPort: 8080, ServicePort: 80}},
			},
			Git: kubeoperav1alpha1.GitSpec{URL: gitURL, Branch: "main"},
		},
	}
	for _, m := range mods {
		m(a)
	}
	return a
}
