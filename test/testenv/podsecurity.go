package testenv

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RestrictedNamespace creates a namespace whose PodSecurity admission enforces the "restricted"
// standard (latest version) and returns its name.
func (e *Env) RestrictedNamespace(ctx context.Context) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "restricted-",
		Labels: map[string]string{
			"pod-security.kubernetes.io/enforce":         "restricted",
			"pod-security.kubernetes.io/enforce-version": "latest",
		},
	}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// AdmitPod submits a pod template as a Pod in namespace ns (server-side dry run: PodSecurity
// judges Pods, not workloads) and returns the API server's answer: nil when it is admitted.
func (e *Env) AdmitPod(ctx context.Context, ns string, tpl corev1.PodTemplateSpec) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns, Labels: tpl.Labels}, Spec: tpl.Spec}
	return e.Client.Create(ctx, pod, client.DryRunAll)
}
