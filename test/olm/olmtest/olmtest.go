// Package olmtest holds what the OLM suites share: reading a bundle's install strategy the way OLM
// and the kubelet do (the manager container, its environment resolved from a pod template), the
// CSV's alm-examples as objects to create, and how a test sees that the manager reconciled one.
// test/olm (the bundle applied by hand) and test/olminstall (the bundle installed by the real OLM)
// both use it, so both judge "installed and reconciling" by the same rules.
package olmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// ManagerContainer is the operator's container in the bundle's Deployment.
const ManagerContainer = "manager"

// TargetNamespacesAnnotation is what OLM writes on the CSV and the operator's pod template.
const TargetNamespacesAnnotation = "olm.targetNamespaces"

// TB is the part of testing.TB the helpers need.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// InstallDeployment returns the CSV's only Deployment and its manager container.
func InstallDeployment(t TB, csv *operatorsv1alpha1.ClusterServiceVersion) (operatorsv1alpha1.StrategyDeploymentSpec, corev1.Container) {
	t.Helper()
	deps := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deps) != 1 {
		t.Fatalf("want one Deployment in the install strategy, found %d", len(deps))
	}
	for _, c := range deps[0].Spec.Template.Spec.Containers {
		if c.Name == ManagerContainer {
			return deps[0], c
		}
	}
	t.Fatalf("Deployment %s has no container %q", deps[0].Name, ManagerContainer)
	return operatorsv1alpha1.StrategyDeploymentSpec{}, corev1.Container{}
}

// Container returns the manager container of a Deployment.
func Container(t TB, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == ManagerContainer {
			return c
		}
	}
	t.Fatalf("Deployment %s/%s has no container %q", d.Namespace, d.Name, ManagerContainer)
	return corev1.Container{}
}

// ALMExamples parses the CSV's alm-examples annotation.
func ALMExamples(t TB, csv *operatorsv1alpha1.ClusterServiceVersion) []unstructured.Unstructured {
	t.Helper()
	var raw []map[string]any
	if err := json.Unmarshal([]byte(csv.GetAnnotations()["alm-examples"]), &raw); err != nil {
		t.Fatalf("alm-examples is not a JSON list of objects: %v", err)
	}
	out := make([]unstructured.Unstructured, len(raw))
	for i := range raw {
		out[i] = unstructured.Unstructured{Object: raw[i]}
	}
	return out
}

var fieldRefAnnotation = regexp.MustCompile(`^metadata\.(annotations|labels)\['([^']+)'\]$`)

// ResolveEnv resolves a container's environment the way the kubelet does for plain values and
// the downward-API fields the bundle uses, for a pod with metadata pod in namespace.
func ResolveEnv(t TB, c corev1.Container, pod metav1.ObjectMeta, namespace string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			path := e.ValueFrom.FieldRef.FieldPath
			switch m := fieldRefAnnotation.FindStringSubmatch(path); {
			case m != nil && m[1] == "annotations":
				out[e.Name] = pod.Annotations[m[2]]
			case m != nil:
				out[e.Name] = pod.Labels[m[2]]
			case path == "metadata.namespace":
				out[e.Name] = namespace
			default:
				t.Fatalf("env %s: field %q is not resolved by this test", e.Name, path)
			}
		default:
			t.Fatalf("env %s: only values and fieldRefs are resolved by this test", e.Name)
		}
	}
	return out
}

// CreateExamples creates each alm-example in namespace (and the Secret the ControlPlane example
// names) and returns them by kind, as created.
func CreateExamples(ctx context.Context, t TB, c client.Client, csv *operatorsv1alpha1.ClusterServiceVersion, namespace string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, ex := range ALMExamples(t, csv) {
		obj := ex.DeepCopy()
		obj.SetNamespace(namespace)
		ref, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "auth", "bootstrap", "passwordSecretRef")
		if ref["name"] != "" {
			secret := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: ref["name"], Namespace: namespace},
				StringData: map[string]string{ref["key"]: "example-password"},
			}
			if err := c.Create(ctx, secret); err != nil {
				t.Fatalf("create Secret %s/%s: %v", namespace, ref["name"], err)
			}
		}
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("alm-example %s %s is rejected by the API server: %v", obj.GetKind(), obj.GetName(), err)
		}
		out[obj.GetKind()] = obj
	}
	return out
}

// Reconciled reports a visible effect of a reconcile: a status condition (ControlPlane: the
// deploying/updating/ready state; KubeOperaApp: Ready and its steps) or the KubeOperaApp finalizer.
func Reconciled(obj *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, f := range obj.GetFinalizers() {
		if f == kubeoperav1alpha1.Finalizer {
			return true
		}
	}
	return len(conditions) > 0
}

// ReconciledAt reports whether the status describes generation gen (status.observedGeneration or
// a condition's observedGeneration), i.e. a reconcile has acted on that spec.
func ReconciledAt(obj *unstructured.Unstructured, gen int64) bool {
	if g, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration"); g >= gen {
		return true
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if g, _, _ := unstructured.NestedInt64(m, "observedGeneration"); g >= gen {
			return true
		}
	}
	return false
}

// OwnedKinds are the kinds a ControlPlane creates first (see the CSV's resources).
var OwnedKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"},
}

// CountOwned counts the objects of OwnedKinds in namespace whose controller is owner.
func CountOwned(ctx context.Context, c client.Client, namespace string, owner types.UID) (int, error) {
	n := 0
	for _, gvk := range OwnedKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return 0, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for _, item := range list.Items {
			if ref := metav1.GetControllerOf(&item); ref != nil && ref.UID == owner {
				n++
			}
		}
	}
	return n, nil
}

// ReadCatalog returns every FBC object of the catalog directory, by file (relative path).
func ReadCatalog(t TB, dir string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path) //nolint:gosec // a file of the walked catalog
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return err
			}
			if obj != nil {
				out[rel] = append(out[rel], obj)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read catalog %s: %v", dir, err)
	}
	return out
}
