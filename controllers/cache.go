package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
)

// Cache scope (docs/benchmarks.md, "Cache scope"). A cluster holds many Secrets and ConfigMaps
// that are none of the operator's business; caching them in full costs memory in proportion to
// the cluster, not to the work. So:
//
//   - ConfigMaps are cached only when they carry the operand label
//     app.kubernetes.io/managed-by=kubeopera-operator: the ControlPlane reconciler reads and
//     watches only the ConfigMaps it creates, and the App Controller reads none on the host.
//   - Secrets are watched through one metadata-only informer (name, namespace, UID,
//     resourceVersion, owner references; no data, labels, annotations or managed fields),
//     shared by both reconcilers: it maps a change of a Secret a ControlPlane or an app references
//     (bootstrap password, bring-your-own TLS, Git, registry, kubeconfig) to the objects to
//     reconcile, and it carries the owner references that map a generated Secret to its
//     ControlPlane.
//   - The data of the Secrets the operator creates is read from a second, label-selected cache
//     (ownedCache), and the data of any other Secret straight from the API server (the few
//     user-referenced Secrets, read once per pass), never cached by an informer. The App
//     Controller keeps the data of the Git Secrets it read, under the UID and resourceVersion
//     the metadata informer shows, and reads again when they change (controllers/app/secretdata.go).

// ownedCache returns a cache of the objects the operator creates (the operand label), in the
// watched namespaces, started with the manager.
func ownedCache(cfg *rest.Config, mgr manager.Manager, namespaces map[string]cache.Config) (cache.Cache, error) {
	c, err := cache.New(cfg, cache.Options{
		HTTPClient:           mgr.GetHTTPClient(),
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultNamespaces:    namespaces,
		DefaultLabelSelector: labels.SelectorFromSet(controlplane.OwnedLabels()),
	})
	if err != nil {
		return nil, fmt.Errorf("create the cache of owned Secrets: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("add the cache of owned Secrets: %w", err)
	}
	return c, nil
}

// mainCacheByObject scopes the manager's cache: ConfigMaps by the operand label, Secrets
// (metadata only, see above) trimmed to what the event handlers read.
func mainCacheByObject() map[client.Object]cache.ByObject {
	return map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(controlplane.OwnedLabels())},
		&corev1.Secret{}:    {Transform: trimSecretMetadata},
	}
}

// trimSecretMetadata keeps what the Secret event handlers, the kubeconfig client cache and the
// push-Secret guard read of a Secret's metadata: name, namespace, UID, resourceVersion,
// generation, owner references, finalizers and deletion timestamp. The App Controller holds its
// finalizer on a push Secret only when the cached metadata lacks it, and its guard watches the
// Secrets that carry it: without the finalizers here, every app pass patched the Secret again
// (found by make bench P5). Of the labels only kubeopera.io/flux-credentials, which the App
// Controller requires on a Secret it copies into a vCluster for Flux; no other label, no
// annotations, no managed fields: every Secret of the cluster is in this informer. Full Secrets
// are not transformed (none should reach this cache: secretReads
// sends them elsewhere; if one does, it stays usable for server-side-apply extraction, which
// needs managedFields).
func trimSecretMetadata(in any) (any, error) {
	m, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	m.ObjectMeta = metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		Generation:        m.Generation,
		DeletionTimestamp: m.DeletionTimestamp,
		OwnerReferences:   m.OwnerReferences,
		Finalizers:        m.Finalizers,
		Labels:            keptSecretLabels(m.Labels),
	}
	return m, nil
}

// keptSecretLabels is the one label of a Secret's metadata the operator reads
// (kubeopera.io/flux-credentials), nil when the Secret has none.
func keptSecretLabels(in map[string]string) map[string]string {
	v, ok := in[kubeoperav1alpha1.LabelFluxCredentials]
	if !ok {
		return nil
	}
	return map[string]string{kubeoperav1alpha1.LabelFluxCredentials: v}
}

// secretReads is the ControlPlane reconciler's client: a Secret is read from the cache of owned
// objects, and from the API server when that cache does not hold it (a user-referenced Secret,
// or one created a moment ago). Everything else goes to the reconciler's client unchanged.
type secretReads struct {
	client.Client
	owned client.Reader
	live  client.Reader
}

// Get reads obj; see secretReads.
func (c secretReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); !ok {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	err := c.owned.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) {
		return c.live.Get(ctx, key, obj, opts...)
	}
	return err
}
