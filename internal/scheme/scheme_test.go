package scheme

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

func TestKindOf(t *testing.T) {
	named := &unstructured.Unstructured{}
	named.SetKind("GitRepository")
	cases := []struct {
		obj  runtime.Object
		want string
	}{
		{&corev1.Secret{}, "Secret"},
		{&appsv1.StatefulSet{}, "StatefulSet"},
		{&kubeoperav1alpha1.KubeOperaApp{}, "KubeOperaApp"},
		{named, "GitRepository"},
		{&unstructured.Unstructured{}, "object"},
	}
	for _, tc := range cases {
		if got := KindOf(tc.obj); got != tc.want {
			t.Errorf("KindOf(%T) = %q, want %q", tc.obj, got, tc.want)
		}
	}
}
