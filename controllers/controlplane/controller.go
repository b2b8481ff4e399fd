package controlplane

import "context"

// reconcileController is the Controller component (spec §4).
func reconcileController(_ context.Context, _ *scope) (result, error) {
	return proceed(), nil
}
