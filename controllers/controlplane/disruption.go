package controlplane

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// applyDisruptionBudget applies the component's PodDisruptionBudget while it runs replicated and
// deletes an owned one otherwise (docs/controlplane.md#disruption-and-spread).
func (r *Reconciler) applyDisruptionBudget(ctx context.Context, s *scope, component, name string, replicated bool) error {
	if !replicated {
		return r.deleteOwned(ctx, s, name, &policyv1.PodDisruptionBudget{})
	}
	_, err := applyIfChanged(ctx, r, s, resources.PodDisruptionBudget(s.cp, component, name), &policyv1.PodDisruptionBudget{},
		policyv1ac.ExtractPodDisruptionBudget)
	return err
}
