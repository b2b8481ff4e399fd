package controlplane

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "k8s.io/api/policy/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// applyDisruptionBudget applies the component's PodDisruptionBudget while it runs replicated and
// deletes an owned one otherwise (docs/controlplane.md#disruption-and-spread).
func applyDisruptionBudget(ctx context.Context, s *scope, component, name string, replicated bool) error {
	if !replicated {
		return deleteOwned(ctx, s, name, &policyv1.PodDisruptionBudget{})
	}
	_, err := applyIfChanged(ctx, s, resources.PodDisruptionBudget(s.cp, component, name), &policyv1.PodDisruptionBudget{},
		policyv1ac.ExtractPodDisruptionBudget)
	return err
}

// uncachedBudgets is the reconciler's client with PodDisruptionBudgets read from the API server
// (live) instead of the cache: they are not watched, so that a manager running under RBAC without
// poddisruptionbudgets (an older bundle's, in the middle of an upgrade) still starts and
// reconciles everything else (docs/controlplane.md#disruption-and-spread).
type uncachedBudgets struct {
	client.Client
	live client.Reader
}

// Get reads a PodDisruptionBudget from the API server and anything else from the client.
func (c uncachedBudgets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*policyv1.PodDisruptionBudget); ok {
		return c.live.Get(ctx, key, obj, opts...)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}
