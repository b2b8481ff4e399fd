package app

import (
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
)

// The vCluster watches (tenantwatch.go) only decide which apps to enqueue: their caches are never
// read by a pass, which reads what it needs from the vCluster itself. A vCluster's administrator
// controls every object in it, so whatever such a cache holds is the tenant's to size: a
// Certificate of megabytes, a Kustomization with a huge inventory, status patches with long
// messages. Each kind's cache therefore keeps, per object, only what its event filter and its
// appsOf read (trimWatched): the identity (name, namespace, UID, resourceVersion, generation,
// deletion), and
//
//   - Kustomization: the observed generation, the last applied revision and the Ready
//     condition (kustomizationFilter, outcomeOf);
//   - Ingress: at most maxWatchedIngressAddresses load-balancer addresses (statusOrGenerationFilter
//     compares the status);
//   - Certificate: spec.secretName (appsOf) and the Ready condition (certificateReadiness reads
//     only it).
//
// Messages are cut to maxWatchedMessage bytes. What a cache holds per object is then bounded
// whatever the tenant writes (TestWatchedObjectsAreTrimmed).

const (
	// maxWatchedIngressAddresses bounds the load-balancer addresses kept of a watched Ingress.
	maxWatchedIngressAddresses = 8
	// maxWatchedMessage bounds the condition message kept of a watched object.
	maxWatchedMessage = 1024
)

// trimWatched is the cache transform of the vCluster watches (a toolscache.TransformFunc).
// Objects of other types are returned unchanged.
func trimWatched(obj any) (any, error) {
	switch o := obj.(type) {
	case *kustomizev1.Kustomization:
		out := &kustomizev1.Kustomization{TypeMeta: o.TypeMeta, ObjectMeta: watchedIdentity(o.ObjectMeta)}
		out.Status.ObservedGeneration = o.Status.ObservedGeneration
		out.Status.LastAppliedRevision = o.Status.LastAppliedRevision
		if c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition); c != nil {
			ready := *c
			ready.Message = cutMessage(ready.Message)
			out.Status.Conditions = []metav1.Condition{ready}
		}
		return out, nil
	case *networkingv1.Ingress:
		out := &networkingv1.Ingress{TypeMeta: o.TypeMeta, ObjectMeta: watchedIdentity(o.ObjectMeta)}
		addrs := o.Status.LoadBalancer.Ingress
		out.Status.LoadBalancer.Ingress = addrs[:min(len(addrs), maxWatchedIngressAddresses)]
		return out, nil
	case *unstructured.Unstructured:
		if o.GetKind() == certificateGVK.Kind {
			return trimWatchedCertificate(o), nil
		}
	}
	return obj, nil
}

var _ toolscache.TransformFunc = trimWatched

// watchedIdentity is the part of an object's metadata a watch reads.
func watchedIdentity(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, DeletionTimestamp: m.DeletionTimestamp,
	}
}

// trimWatchedCertificate keeps a cert-manager Certificate's identity, spec.secretName and Ready
// condition (its status, reason, message, observedGeneration).
func trimWatchedCertificate(u *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetGeneration(u.GetGeneration())
	out.SetDeletionTimestamp(u.GetDeletionTimestamp())
	if secret, ok, _ := unstructured.NestedString(u.Object, "spec", "secretName"); ok {
		_ = unstructured.SetNestedField(out.Object, secret, "spec", "secretName")
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		c, ok := raw.(map[string]any)
		if !ok || c["type"] != "Ready" {
			continue
		}
		ready := map[string]any{}
		for _, k := range []string{"type", "status", "reason", "observedGeneration"} {
			if v, ok := c[k]; ok {
				ready[k] = v
			}
		}
		if msg, ok := c["message"].(string); ok {
			ready["message"] = cutMessage(msg)
		}
		_ = unstructured.SetNestedSlice(out.Object, []any{ready}, "status", "conditions")
		break
	}
	return out
}

// cutMessage bounds a condition message to maxWatchedMessage bytes.
func cutMessage(s string) string {
	if len(s) <= maxWatchedMessage {
		return s
	}
	return s[:maxWatchedMessage]
}
