// Package app reconciles KubeOperaApp objects (kubeopera.io/v1alpha1): tenant vCluster resolution,
// manifests committed to Git, and Flux pointed at them inside the vCluster.
package app

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// Reconciler reconciles KubeOperaApp objects.
type Reconciler struct {
	client.Client
	Options Options
}

// NewReconciler builds a Reconciler from the manager's client.
func NewReconciler(mgr manager.Manager, opts Options) (*Reconciler, error) {
	return &Reconciler{Client: mgr.GetClient(), Options: opts}, nil
}

// Reconcile is the entry point for one KubeOperaApp.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	obj := &kubeoperav1alpha1.KubeOperaApp{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&kubeoperav1alpha1.KubeOperaApp{}).
		Named("kubeoperaapp").
		Complete(r)
}
