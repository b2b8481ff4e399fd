// Package controlplane reconciles ControlPlane objects (datasance.com/v3).
package controlplane

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// Reconciler reconciles ControlPlane objects. It holds dependencies only; the state of one pass
// lives in a scope.
type Reconciler struct {
	client.Client
	Options Options
}

// NewReconciler builds a Reconciler from the manager's client.
func NewReconciler(mgr manager.Manager, opts Options) *Reconciler {
	return &Reconciler{Client: mgr.GetClient(), Options: opts}
}

// Reconcile is the entry point for one ControlPlane.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cp := &datasancev3.ControlPlane{}
	if err := r.Get(ctx, req.NamespacedName, cp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&datasancev3.ControlPlane{}).
		Named("controlplane").
		Complete(r)
}
