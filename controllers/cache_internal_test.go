package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A Secret is read from the owned cache when it is there and from the API server otherwise;
// other kinds go to the manager's client.
func TestSecretReads(t *testing.T) {
	ctx := context.Background()
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	var liveGets int
	owned := fake.NewClientBuilder().WithObjects(secret("generated")).Build()
	live := interceptor.NewClient(fake.NewClientBuilder().WithObjects(secret("generated"), secret("user")).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			liveGets++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	main := fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}).Build()
	c := secretReads{Client: main, owned: owned, live: live}

	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "generated"}, &corev1.Secret{}); err != nil || liveGets != 0 {
		t.Fatalf("owned Secret: err=%v, API reads=%d; want it from the owned cache", err, liveGets)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "user"}, &corev1.Secret{}); err != nil || liveGets != 1 {
		t.Fatalf("user Secret: err=%v, API reads=%d; want one API read", err, liveGets)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "missing"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("missing Secret: err=%v, want NotFound", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "cm"}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("ConfigMap through the manager's client: %v", err)
	}
}

func TestTrimSecretMetadata(t *testing.T) {
	in := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: "s", UID: "u", ResourceVersion: "7",
		Labels: map[string]string{"a": "b", "kubeopera.io/flux-credentials": "true"}, Annotations: map[string]string{"c": "d"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m"}},
		OwnerReferences: []metav1.OwnerReference{{Name: "iofog", UID: "o"}},
		Finalizers:      []string{"kubeopera.io/git-credentials-in-use"},
	}}
	out, err := trimSecretMetadata(in)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := out.(*metav1.PartialObjectMetadata)
	if !ok {
		t.Fatalf("%T", out)
	}
	if m.Name != "s" || m.Namespace != "ns" || m.UID != "u" || m.ResourceVersion != "7" || len(m.OwnerReferences) != 1 ||
		len(m.Finalizers) != 1 { // the App Controller's push-Secret guard reads the finalizers
		t.Fatalf("kept too little: %+v", m.ObjectMeta)
	}
	// The App Controller copies a Secret into a vCluster for Flux only with this label.
	if len(m.Labels) != 1 || m.Labels["kubeopera.io/flux-credentials"] != "true" {
		t.Fatalf("labels: %v, want the Flux credentials label only", m.Labels)
	}
	if m.Annotations != nil || m.ManagedFields != nil {
		t.Fatalf("kept too much: %+v", m.ObjectMeta)
	}
	full := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
	if out, _ := trimSecretMetadata(full); len(out.(*corev1.Secret).ManagedFields) != 1 {
		t.Fatal("a full Secret lost its managed fields")
	}
}
