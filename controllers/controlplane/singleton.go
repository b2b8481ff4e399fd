package controlplane

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// One ControlPlane per namespace (docs/controlplane.md#one-controlplane-per-namespace). Every
// object a ControlPlane owns has a fixed name, so two ControlPlanes in one namespace would
// re-point each other's Services and Secrets and fight over immutable selectors forever. The
// API server cannot refuse the second one at admission (a CEL rule sees one object only, and the
// operator runs no webhook), so the reconciler does: the namespace's holder runs, every other
// ControlPlane there gets the terminal reason DuplicateControlPlane and writes nothing but its
// own status.

// namespaceHolder names the ControlPlane that runs in cp's namespace: the one that controls
// Service controller (it has been deployed), else — before any has deployed, or when the
// Service's owner is gone — the oldest by creation time, then by name, among those not being
// deleted. The steady state costs one cached Get: the Service is owned by cp itself; anything
// else adds one List of the namespace's ControlPlanes.
func (r *Reconciler) namespaceHolder(ctx context.Context, cp *datasancev3.ControlPlane) (string, error) {
	svc := &corev1.Service{}
	owner := ""
	err := r.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: resources.ControllerName}, svc)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return "", fmt.Errorf("read Service %s to find the namespace's ControlPlane: %w", resources.ControllerName, err)
	default:
		owner = controlPlaneOwner(svc)
	}
	if owner == cp.Name {
		return owner, nil
	}
	var list datasancev3.ControlPlaneList
	if err := r.List(ctx, &list, client.InNamespace(cp.Namespace)); err != nil {
		return "", fmt.Errorf("list the namespace's ControlPlanes: %w", err)
	}
	return holderOf(list.Items, owner, cp.Name), nil
}

// controlPlaneOwner is the name of the ControlPlane that controls obj, or "".
func controlPlaneOwner(obj metav1.Object) string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != "ControlPlane" || ref.APIVersion != datasancev3.GroupVersion.String() {
		return ""
	}
	return ref.Name
}

// holderOf names the holder among items: owner when it is there and not being deleted (when it
// is gone, its objects wait for the garbage collector), else the oldest ControlPlane not being
// deleted (creation time, then name); self when none is left (the list may not show self yet).
func holderOf(items []datasancev3.ControlPlane, owner, self string) string {
	live := make([]*datasancev3.ControlPlane, 0, len(items))
	for i := range items {
		if !items[i].DeletionTimestamp.IsZero() {
			continue
		}
		if owner != "" && items[i].Name == owner {
			return owner
		}
		live = append(live, &items[i])
	}
	if len(live) == 0 {
		return self
	}
	sort.Slice(live, func(i, j int) bool {
		a, b := live[i].CreationTimestamp, live[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return live[i].Name < live[j].Name
	})
	return live[0].Name
}

// refuseDuplicate records on cp that holder runs in the namespace: the terminal reason
// DuplicateControlPlane on the state's condition, with one Warning Event per holder. Nothing
// else is written; the pass ends without a requeue (the ControlPlane delete watch brings it back
// when the holder goes).
func (r *Reconciler) refuseDuplicate(cp *datasancev3.ControlPlane, holder string) {
	msg := fmt.Sprintf("ControlPlane %s already runs in namespace %s, and a namespace holds one ControlPlane: "+
		"this one does nothing until it is moved to another namespace or %s is deleted.", holder, cp.Namespace, holder)
	prev := trueCondition(cp)
	setState(cp, effectiveState(cp), datasancev3.ReasonDuplicateControlPlane, msg)
	if prev == nil || prev.Reason != datasancev3.ReasonDuplicateControlPlane || prev.Message != msg {
		r.event(cp, corev1.EventTypeWarning, datasancev3.ReasonDuplicateControlPlane, msg)
	}
}

// otherControlPlanesOnDelete queues the other ControlPlanes of a deleted ControlPlane's
// namespace: a refused duplicate may now be the holder.
func (r *Reconciler) otherControlPlanesOnDelete(ctx context.Context, obj client.Object) []reconcile.Request {
	var list datasancev3.ControlPlaneList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the ControlPlanes of a deleted ControlPlane's namespace failed; a refused duplicate there waits for its next event",
			"ControlPlane", klog.KObj(obj))
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].Name != obj.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// deletesOnly passes delete events only.
func deletesOnly() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
	}
}
