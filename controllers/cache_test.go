package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// The manager's cache holds only what the operator owns: an unrelated ConfigMap is not cached,
// a labelled one is; Secrets are cached as trimmed metadata only.
func TestCacheScope(t *testing.T) {
	if testing.Short() {
		t.Skip("envtest suite (-short)")
	}
	env := testenv.StartForTest(t, testenv.Options{})
	g := NewWithT(t)
	ctx := context.Background()

	ns := "cache-scope"
	g.Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	owned := map[string]string{"app.kubernetes.io/managed-by": "kubeopera-operator"}
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unrelated"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owned", Labels: owned}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "user", Labels: map[string]string{"team": "a"},
			Annotations: map[string]string{"note": "x"}}, Data: map[string][]byte{"password": []byte("p")}},
	} {
		g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	}

	opts := controllers.DefaultOptions()
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.Apps.GitCacheDir = t.TempDir()
	mgr, err := controllers.New(env.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})
	c := mgr.GetCache()
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "owned"}, &corev1.ConfigMap{})
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unrelated"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "an unrelated ConfigMap is cached: %v", err)

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	g.Eventually(func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "user"}, meta)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	g.Expect(meta.UID).NotTo(BeEmpty())
	g.Expect(meta.ResourceVersion).NotTo(BeEmpty())
	g.Expect(meta.Labels).To(BeEmpty())
	g.Expect(meta.Annotations).To(BeEmpty())
	g.Expect(meta.ManagedFields).To(BeEmpty())
}
