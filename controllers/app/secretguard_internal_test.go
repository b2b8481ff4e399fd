package app

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// pushSecretFixture is an app that pushes with the Secret key (ns/git), a test reconciler that
// holds both, and its host client underneath, which the tests wrap with interceptors.
func pushSecretFixture(g Gomega, t *testing.T) (types.NamespacedName, *kubeoperav1alpha1.KubeOperaApp, *testReconciler, client.WithWatch) {
	key := types.NamespacedName{Namespace: "ns", Name: "git"}
	app := testfixture.KubeOperaApp(testfixture.AppGitSecret(key.Name))
	tr := newTestReconciler(t, nil, app, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	host, ok := tr.Client.(client.WithWatch)
	g.Expect(ok).To(BeTrue())
	return key, app, tr, host
}

// Apps created together that push with one Secret hold it at once: the pass whose finalizer
// patch conflicts because another app's pass held the Secret first reads it again from the API
// server and goes on, instead of failing. Fails when the conflict ends the pass.
func TestHoldPushSecretGoesOnWhenAnotherAppHeldItFirst(t *testing.T) {
	g := NewWithT(t)
	key, app, tr, host := pushSecretFixture(g, t)
	patches := 0
	tr.Client = interceptor.NewClient(host, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patches++
			if patches == 1 {
				// Another app's pass holds the Secret first: this patch is based on the
				// version before it.
				s := &corev1.Secret{}
				g.Expect(c.Get(ctx, key, s)).To(Succeed())
				controllerutil.AddFinalizer(s, kubeoperav1alpha1.SecretFinalizer)
				g.Expect(c.Update(ctx, s)).To(Succeed())
				return apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, key.Name, nil)
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})

	g.Expect(tr.holdPushSecret(context.Background(), &scope{app: app, key: appKey})).To(Succeed())
	g.Expect(patches).To(Equal(1), "the Secret was held already: no second patch")
	s := &corev1.Secret{}
	g.Expect(host.Get(context.Background(), key, s)).To(Succeed())
	g.Expect(s.Finalizers).To(ConsistOf(kubeoperav1alpha1.SecretFinalizer))
}

// Apps created together that push with one Secret hold it with one patch between them, even
// while the cache still shows the Secret as it was before that patch (the cache of this test
// never catches up): the others find the hold in the record of the first one's patch. Fails
// when each pass patches (a conflict and a read from the API server each).
func TestAppsSharingAPushSecretHoldItWithOnePatch(t *testing.T) {
	g := NewWithT(t)
	key, app, tr, host := pushSecretFixture(g, t)
	stale := secretMetadata(key)
	g.Expect(host.Get(context.Background(), key, stale)).To(Succeed())
	var mu sync.Mutex
	patches, apiReads := 0, 0
	tr.Client = interceptor.NewClient(host, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if m, ok := obj.(*metav1.PartialObjectMetadata); ok && k == key {
				stale.DeepCopyInto(m)
				return nil
			}
			return c.Get(ctx, k, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			mu.Lock()
			patches++
			mu.Unlock()
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	tr.apiReader = interceptor.NewClient(host, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			mu.Lock()
			apiReads++
			mu.Unlock()
			return c.Get(ctx, k, obj, opts...)
		},
	})

	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() { errs[i] = tr.holdPushSecret(context.Background(), &scope{app: app, key: appKey}) })
	}
	wg.Wait()
	for _, err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(patches).To(Equal(1), "one patch for ten passes")
	g.Expect(apiReads).To(BeZero(), "no conflict to read the Secret again after")
	s := &corev1.Secret{}
	g.Expect(host.Get(context.Background(), key, s)).To(Succeed())
	g.Expect(s.Finalizers).To(ConsistOf(kubeoperav1alpha1.SecretFinalizer))

	// Released (the resourceVersion moved on, no finalizer): the next pass holds it again.
	controllerutil.RemoveFinalizer(s, kubeoperav1alpha1.SecretFinalizer)
	g.Expect(host.Update(context.Background(), s)).To(Succeed())
	g.Expect(host.Get(context.Background(), key, stale)).To(Succeed())
	g.Expect(tr.holdPushSecret(context.Background(), &scope{app: app, key: appKey})).To(Succeed())
	g.Expect(patches).To(Equal(2))
	g.Expect(host.Get(context.Background(), key, s)).To(Succeed())
	g.Expect(s.Finalizers).To(ConsistOf(kubeoperav1alpha1.SecretFinalizer))
}

// Holding a push Secret that many apps share must not cost each of them a pass: the Secret
// watch drops an update that only adds or removes the operator's finalizer, and passes every
// other change.
func TestSecretUpdatesThatOnlyHoldItStartNoPass(t *testing.T) {
	base := func() *metav1.PartialObjectMetadata {
		m := secretMetadata(types.NamespacedName{Namespace: "ns", Name: "git"})
		m.ResourceVersion, m.Labels = "1", map[string]string{"team": "a"}
		return m
	}
	held := func(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
		controllerutil.AddFinalizer(m, kubeoperav1alpha1.SecretFinalizer)
		return m
	}
	for name, tc := range map[string]struct {
		old, new func() *metav1.PartialObjectMetadata
		pass     bool
	}{
		"the operator holds it":                     {base, func() *metav1.PartialObjectMetadata { m := held(base()); m.ResourceVersion = "2"; return m }, false},
		"the operator releases it":                  {func() *metav1.PartialObjectMetadata { return held(base()) }, base, false},
		"new data (only the resourceVersion moves)": {base, func() *metav1.PartialObjectMetadata { m := base(); m.ResourceVersion = "2"; return m }, true},
		"held and relabelled in one write": {base, func() *metav1.PartialObjectMetadata {
			m := held(base())
			m.Labels = map[string]string{"team": "b"}
			return m
		}, true},
		"another finalizer": {base, func() *metav1.PartialObjectMetadata {
			m := held(base())
			m.Finalizers = append(m.Finalizers, "example.com/keep")
			return m
		}, true},
		"deleted while held": {func() *metav1.PartialObjectMetadata { return held(base()) }, func() *metav1.PartialObjectMetadata {
			now := metav1.Now()
			m := base()
			m.DeletionTimestamp = &now
			return m
		}, true},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(notOnlyTheHold.Update(event.UpdateEvent{ObjectOld: tc.old(), ObjectNew: tc.new()})).To(Equal(tc.pass))
		})
	}
}
