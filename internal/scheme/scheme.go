// Package scheme builds the runtime scheme of every type the operator reads or writes. It is a
// leaf package (client-go, the project's APIs, the Tenant mirror and Flux's types only), so the
// manager, the reconcilers' tests and the test helpers share one list without import cycles.
package scheme

import (
	"sync"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// New returns a scheme with the core types, ControlPlane, KubeOperaApp, Tenant, and Flux's
// GitRepository and Kustomization (written into tenant vClusters).
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(datasancev3.AddToScheme(s))
	utilruntime.Must(kubeoperav1alpha1.AddToScheme(s))
	utilruntime.Must(tenantv1alpha1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	utilruntime.Must(kustomizev1.AddToScheme(s))
	return s
}

// shared is the scheme KindOf reads: built once, never written after.
var shared = sync.OnceValue(New)

// KindOf names obj's kind as the API server does (Deployment, Secret, Kustomization): its
// TypeMeta's when set, else the kind the operator's scheme registers for its Go type, else
// "object". Logs and messages name kinds with it, never with the Go type (%T).
func KindOf(obj runtime.Object) string {
	if kind := obj.GetObjectKind().GroupVersionKind().Kind; kind != "" {
		return kind
	}
	if gvks, _, err := shared().ObjectKinds(obj); err == nil && len(gvks) > 0 {
		return gvks[0].Kind
	}
	return "object"
}
