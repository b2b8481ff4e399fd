package main

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestFinalizeCSVReplaces(t *testing.T) {
	g := NewWithT(t)
	csv := func() map[string]any {
		return map[string]any{
			"metadata": map[string]any{},
			"spec": map[string]any{
				"version":  "0.2.0",
				"replaces": "stale.v0.0.1",
				"install": map[string]any{"spec": map[string]any{"deployments": []any{map[string]any{
					"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
						map[string]any{"name": "manager", "image": "example/op:v0.2.0"},
					}}}},
				}}}},
			},
		}
	}
	base := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"createdAt": "2026-12-01T00:00:00Z"}}}
	icon := map[string]any{"base64data": "", "mediatype": "image/svg+xml"}

	c := csv()
	g.Expect(finalizeCSV(c, base, icon, "d", "op.v0.1.0")).To(Succeed())
	got, _, _ := unstructured.NestedString(c, "spec", "replaces")
	g.Expect(got).To(Equal("op.v0.1.0"))
	skip, _, _ := unstructured.NestedString(c, "metadata", "annotations", "olm.skipRange")
	g.Expect(skip).To(Equal("<0.2.0"))

	// The first release replaces nothing: a stale value is dropped.
	c = csv()
	g.Expect(finalizeCSV(c, base, icon, "d", "")).To(Succeed())
	_, found, _ := unstructured.NestedString(c, "spec", "replaces")
	g.Expect(found).To(BeFalse())
}
