package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
)

// cacheScopeObjects creates, before the manager starts, what assertCacheScope looks for: an
// unrelated and an owned ConfigMap, and a user Secret with labels and annotations.
func cacheScopeObjects(ctx context.Context, g Gomega, c client.Client) {
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scopeNS}})).To(Succeed())
	owned := controlplane.OwnedLabels()
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: scopeNS, Name: "unrelated"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: scopeNS, Name: "owned", Labels: owned}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: scopeNS, Name: "user", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "x"}}, Data: map[string][]byte{"password": []byte("p")}},
	} {
		g.Expect(c.Create(ctx, obj)).To(Succeed())
	}
}

const scopeNS = "cache-scope"

// assertCacheScope: the manager's cache holds only what the operator owns — an unrelated
// ConfigMap is not cached, a labelled one is; Secrets are cached as trimmed metadata only. (Called
// from TestManagerStartsWithoutTenantCRD: controller names are unique per process, so the tests
// of this package start one manager.)
func assertCacheScope(ctx context.Context, g Gomega, c cache.Cache) {
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: scopeNS, Name: "owned"}, &corev1.ConfigMap{})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	err := c.Get(ctx, client.ObjectKey{Namespace: scopeNS, Name: "unrelated"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an unrelated ConfigMap is cached: %v", err)

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: scopeNS, Name: "user"}, meta)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(meta.UID).NotTo(BeEmpty())
	g.Expect(meta.ResourceVersion).NotTo(BeEmpty())
	g.Expect(meta.Labels).To(BeEmpty())
	g.Expect(meta.Annotations).To(BeEmpty())
	g.Expect(meta.ManagedFields).To(BeEmpty())
}
