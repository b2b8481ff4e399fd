package gitops

import (
	"context"
	"testing"
)

// BenchmarkApplyUnchanged measures the steady state of a periodic reconcile:
// fetch, reset and compare, with nothing to commit or push.
func BenchmarkApplyUnchanged(b *testing.B) {
	repo := testRepo(newServer(b))
	w := newTestWriter(b)
	change := appChange("web", map[string]string{
		"deployment.yaml":    "kind: Deployment\n",
		"service.yaml":       "kind: Service\n",
		"kustomization.yaml": "resources: [deployment.yaml, service.yaml]\n",
	})
	apply(b, w, repo, change)
	ctx := context.Background()

	b.ReportAllocs()
	for b.Loop() {
		res, err := w.Apply(ctx, repo, change)
		if err != nil {
			b.Fatal(err)
		}
		if res.Changed {
			b.Fatal("identical content reported as changed")
		}
	}
}
