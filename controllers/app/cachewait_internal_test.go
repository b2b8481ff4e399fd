package app

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// laggingCache plays the manager's cache in front of the fake host: after a write to the app,
// the next lag reads of it return the app as it was before that write, as an informer that has
// not yet seen the write's watch event would. It counts the writes to the app.
type laggingCache struct {
	lag, left int
	stale     *kubeoperav1alpha1.KubeOperaApp
	writes    int
}

func (lc *laggingCache) client(host client.WithWatch) client.Client {
	return interceptor.NewClient(host, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if a, ok := obj.(*kubeoperav1alpha1.KubeOperaApp); ok && key == appKey && lc.left > 0 {
				lc.left--
				lc.stale.DeepCopyInto(a)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			lc.beforeWrite(ctx, c, obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			lc.beforeWrite(ctx, c, obj)
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
}

func (lc *laggingCache) beforeWrite(ctx context.Context, c client.Reader, obj client.Object) {
	if _, ok := obj.(*kubeoperav1alpha1.KubeOperaApp); !ok {
		return
	}
	lc.writes++
	if lc.left == 0 {
		lc.stale = &kubeoperav1alpha1.KubeOperaApp{}
		if err := c.Get(ctx, appKey, lc.stale); err != nil {
			panic(err)
		}
	}
	lc.left = lc.lag
}

// TestNextPassReadsThisPassesWrites: a pass that wrote the app returns only once the cache
// shows its writes, so a pass queued meanwhile (by an unrelated watch) finds the refusal already
// recorded and writes nothing, and the Warning Event is not recorded twice. Without the wait,
// the second pass reads the app without its finalizer and status.
func TestNextPassReadsThisPassesWrites(t *testing.T) {
	g := NewWithT(t)
	tr := newTestReconciler(t, nil, testfixture.KubeOperaApp(), testfixture.Tenant(testfixture.TenantCloudSpace("someone-else")))
	host := tr.host.(client.WithWatch)
	lc := &laggingCache{lag: 3}
	tr.Client = lc.client(host)

	_, err := tr.reconcileErr(t)
	g.Expect(err).To(MatchError(ContainSubstring("someone-else")))
	g.Expect(lc.writes).To(Equal(2), "the finalizer and the status")
	g.Expect(lc.left).To(BeZero(), "the pass returned before the cache showed its writes")

	// A pass queued by an unrelated event while the first ran.
	lc.writes = 0
	a, err := tr.reconcileErr(t)
	g.Expect(err).To(MatchError(ContainSubstring("someone-else")))
	g.Expect(lc.writes).To(BeZero(), "the same refusal written again")
	g.Expect(readyReason(a)).To(Equal(kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch))
	g.Expect(tr.countEvents("Warning " + kubeoperav1alpha1.ReasonTenantCloudSpaceMismatch)).To(Equal(1))
}
