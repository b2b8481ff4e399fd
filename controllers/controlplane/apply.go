package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
)

// applyConfiguration is what the apply helpers need of a typed apply configuration.
type applyConfiguration interface {
	runtime.ApplyConfiguration
	GetName() *string
}

// extractFunc extracts the fields a field manager owns from a live object (client-go's
// ExtractDeployment, ExtractService, ...).
type extractFunc[T client.Object, AC applyConfiguration] func(T, string) (AC, error)

// applyIfChanged writes desired with server-side apply (field manager FieldOwner, forced
// ownership) unless the live object already holds exactly what this field manager applied last.
// live is an empty object of the right type; it is filled with the object as read. The
// comparison uses the fields the manager owns (managedFields), so a field another actor changed
// or removed is restored, and a pass over unchanged objects sends no write at all.
func applyIfChanged[T client.Object, AC applyConfiguration](ctx context.Context, r *Reconciler, s *scope, desired AC, live T, extract extractFunc[T, AC]) (changed bool, err error) {
	key := types.NamespacedName{Namespace: s.namespace(), Name: ptr.Deref(desired.GetName(), "")}
	switch err := r.Get(ctx, key, live); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("get %s %s: %w", scheme.KindOf(live), key, err))
	default:
		current, err := extract(live, FieldOwner)
		if err != nil {
			return false, outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("extract %s %s: %w", scheme.KindOf(live), key, err))
		}
		if sameJSON(current, desired) {
			return false, nil
		}
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Applying object", scheme.KindOf(live), klog.KRef(key.Namespace, key.Name))
	if err := r.Apply(ctx, desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("apply %s %s: %w", scheme.KindOf(live), key, err))
	}
	return true, nil
}

// errCacheStale means a create-once object exists although the (cached) read did not show it.
// The object is never overwritten; the next pass reads it.
var errCacheStale = errors.New("object exists already; the cache had not shown it yet")

// createIfAbsent creates desired only when no object of that name exists; an existing one is
// left exactly as it is (Roles, RoleBindings, the SQLite PVC: docs/controlplane.md#create-once-objects). It creates rather than
// applies, so that even a stale cache can never make it overwrite an existing object. live is
// an empty object of the right type; it is filled with the existing object, if any.
func createIfAbsent[T client.Object](ctx context.Context, r *Reconciler, s *scope, desired applyConfiguration, live T) (created bool, err error) {
	found, err := r.getExisting(ctx, s, ptr.Deref(desired.GetName(), ""), live)
	if err != nil || found {
		return false, err
	}
	switch err := r.createOnce(ctx, desired, live); {
	case errors.Is(err, errCacheStale):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// createOnce creates desired, converted to obj's type, with the field manager FieldOwner. An
// existing object is never updated: AlreadyExists is errCacheStale.
func (r *Reconciler) createOnce(ctx context.Context, desired applyConfiguration, obj client.Object) error {
	raw, err := json.Marshal(desired)
	if err == nil {
		err = json.Unmarshal(raw, obj)
	}
	if err != nil {
		return fmt.Errorf("convert %s %s: %w", scheme.KindOf(obj), ptr.Deref(desired.GetName(), ""), err)
	}
	return r.createObject(ctx, obj)
}

// createObject creates obj with the field manager FieldOwner. An existing object is never
// updated: AlreadyExists is errCacheStale, which requeueIfStale turns into a short requeue.
func (r *Reconciler) createObject(ctx context.Context, obj client.Object) error {
	switch err := r.Create(ctx, obj, client.FieldOwner(FieldOwner)); {
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("create %s %s: %w", scheme.KindOf(obj), obj.GetName(), errCacheStale)
	case err != nil:
		return outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("create %s %s: %w", scheme.KindOf(obj), obj.GetName(), err))
	}
	return nil
}

// requeueIfStale turns errCacheStale into a short requeue and passes other errors on.
func requeueIfStale(err error) error {
	if errors.Is(err, errCacheStale) {
		return outcome.Wait(datasancev3.ReasonProgressing, requeueTransition,
			"Waiting for the cache to show objects created meanwhile.")
	}
	return err
}

// deleteOwned deletes the named object when it exists and is controlled by the ControlPlane
// (an Ingress or vault Secret left over after a spec change). Objects of others are kept.
func (r *Reconciler) deleteOwned(ctx context.Context, s *scope, name string, live client.Object) error {
	key := types.NamespacedName{Namespace: s.namespace(), Name: name}
	if err := r.Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return outcome.Retry(datasancev3.ReasonApplyFailed, err)
	}
	if !isControlledBy(live, s.cp.UID) {
		return nil
	}
	if err := r.Delete(ctx, live, client.Preconditions{UID: ptr.To(live.GetUID())}); client.IgnoreNotFound(err) != nil {
		return outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("delete %s %s: %w", scheme.KindOf(live), key, err))
	}
	return nil
}

// releaseDataStore removes the ControlPlane's owner reference from a data store it keeps on
// deletion (the SQLite PVC, the JetStream key, the CA Secrets, the JWT bundle) that an earlier
// operator version or the Datasance operator created owned, so that deleting the ControlPlane
// does not garbage-collect it. It writes only when such a reference exists, under an optimistic
// lock.
//
// Where OwnerReferencesPermissionEnforcement runs (OpenShift enables it), removing an owner
// reference needs delete on the object, and the operator holds delete on Secrets and PVCs for
// the names it writes only (rbac.go): the JetStream key Secret carries the ControlPlane's name, so
// its release is refused there. That stops the component with the terminal DataStoreOwned and
// the command that removes the reference, rather than leaving a store the next deletion of the
// ControlPlane would take with it; the Secret watch brings the ControlPlane back once it is gone.
func (r *Reconciler) releaseDataStore(ctx context.Context, s *scope, component string, obj client.Object) error {
	refs := obj.GetOwnerReferences()
	kept := make([]metav1.OwnerReference, 0, len(refs))
	at := -1
	for i, ref := range refs {
		if ref.UID != s.cp.UID {
			kept = append(kept, ref)
		} else if at < 0 {
			at = i
		}
	}
	if len(kept) == len(refs) {
		return nil
	}
	kind := scheme.KindOf(obj)
	base, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copy %s", scheme.KindOf(obj))
	}
	obj.SetOwnerReferences(kept)
	err := r.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsForbidden(err):
		return r.refuse(s, component, datasancev3.ReasonDataStoreOwned, fmt.Errorf(
			"%s %s carries the ControlPlane's owner reference, so deleting the ControlPlane would delete it, and the API server "+
				"refused to remove the reference (the operator may delete, and so un-own, only the objects whose names it writes); "+
				"remove it: kubectl -n %s patch %s %s --type=json -p '[{\"op\":\"test\",\"path\":\"/metadata/ownerReferences/%d/uid\",\"value\":\"%s\"},{\"op\":\"remove\",\"path\":\"/metadata/ownerReferences/%d\"}]'",
			kind, obj.GetName(), obj.GetNamespace(), strings.ToLower(kind), obj.GetName(), at, s.cp.UID, at))
	case err != nil:
		return outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("release %s %s from the ControlPlane: %w", kind, obj.GetName(), err))
	}
	ctrl.LoggerFrom(ctx).Info("Kept a data store out of garbage collection", kind, klog.KObj(obj))
	return nil
}

// isControlledBy reports whether obj's controller reference points at uid.
func isControlledBy(obj client.Object, uid types.UID) bool {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.UID == uid {
			return true
		}
	}
	return false
}

// sameJSON compares two values by their JSON form, which is how the API server sees them:
// omitted empty fields and equal quantities compare equal. Semantic deep equality decides the
// common case (nothing changed) without encoding.
func sameJSON(a, b any) bool {
	if equality.Semantic.DeepEqual(a, b) {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// getExisting reads the named object of the ControlPlane's namespace into live. found is false
// when it does not exist.
func (r *Reconciler) getExisting(ctx context.Context, s *scope, name string, live client.Object) (found bool, err error) {
	key := types.NamespacedName{Namespace: s.namespace(), Name: name}
	switch err := r.Get(ctx, key, live); {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, outcome.Retry(datasancev3.ReasonApplyFailed, fmt.Errorf("get %s %s: %w", scheme.KindOf(live), key, err))
	}
}
