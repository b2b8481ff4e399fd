package testbed

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The in-process stand-ins of the test bed. Each writes exactly what the part it replaces would
// write: a CSI driver's external-provisioner (a PersistentVolume bound to the claim by claimRef,
// deleted once released) and OpenShift's namespace SCC allocation controller (the range
// annotations).

// provisionedBy is the annotation external provisioners put on the volumes they create.
const provisionedBy = "pv.kubernetes.io/provisioned-by"

// setupProvisioner registers the provisioner of StorageClass: a pending claim of the class gets a
// PersistentVolume of its size and access modes, pre-bound to it (kube-controller-manager's
// binder then binds both); a released volume of the class is deleted (reclaim policy Delete).
func setupProvisioner(mgr manager.Manager) error {
	c := mgr.GetClient()
	if err := ctrl.NewControllerManagedBy(mgr).Named("testbed-provisioner").For(&corev1.PersistentVolumeClaim{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return provision(ctx, c, req)
		})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("testbed-reclaimer").For(&corev1.PersistentVolume{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			pv := &corev1.PersistentVolume{}
			if err := c.Get(ctx, req.NamespacedName, pv); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			if pv.Annotations[provisionedBy] != Provisioner || pv.Status.Phase != corev1.VolumeReleased ||
				pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(c.Delete(ctx, pv))
		}))
}

func provision(ctx context.Context, c client.Client, req reconcile.Request) (reconcile.Result, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(ctx, req.NamespacedName, pvc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pvc.Spec.VolumeName != "" || !pvc.DeletionTimestamp.IsZero() || pvc.Spec.StorageClassName == nil ||
		*pvc.Spec.StorageClassName != StorageClass {
		return reconcile.Result{}, nil
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "pvc-" + string(pvc.UID),
			Annotations: map[string]string{provisionedBy: Provisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			StorageClassName:              StorageClass,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			// Never mounted: kwok's pods only report that they run.
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/testbed/" + string(pvc.UID)},
			},
		},
	}
	if err := c.Create(ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, fmt.Errorf("provision a volume for %s: %w", req, err)
	}
	return reconcile.Result{}, nil
}

// setupRangeAllocator registers the SCC range allocation: a namespace without a UID range gets
// one, with its supplemental groups and MCS level.
func setupRangeAllocator(mgr manager.Manager) error {
	c := mgr.GetClient()
	alloc := &rangeAllocator{}
	return ctrl.NewControllerManagedBy(mgr).Named("testbed-scc-ranges").For(&corev1.Namespace{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			ns := &corev1.Namespace{}
			if err := c.Get(ctx, req.NamespacedName, ns); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			if _, ok := ns.Annotations[AnnotationUIDRange]; ok || !ns.DeletionTimestamp.IsZero() {
				return reconcile.Result{}, nil
			}
			patch := client.MergeFrom(ns.DeepCopy())
			if ns.Annotations == nil {
				ns.Annotations = map[string]string{}
			}
			for k, v := range alloc.annotations() {
				ns.Annotations[k] = v
			}
			return reconcile.Result{}, client.IgnoreNotFound(c.Patch(ctx, ns, patch))
		}))
}
