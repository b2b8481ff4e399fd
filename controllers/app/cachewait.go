package app

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// awaitOwnWrites returns once the cache shows this pass's writes to the app (the finalizer, the
// placement annotation and status, the status), so the next pass of the app, queued meanwhile by
// another watch, does not write the same status or record the same Event again
// (internal/cachewait; a CI run of TestBadInputMatrix saw a refusal's status written twice).
func (r *Reconciler) awaitOwnWrites(ctx context.Context, s *scope) {
	if err := s.versions.Await(ctx, r.Client, s.key, &kubeoperav1alpha1.KubeOperaApp{}); err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("The cache does not show this pass's writes yet; the next pass may repeat them",
			"resourceVersion", s.versions.Last())
	}
}
