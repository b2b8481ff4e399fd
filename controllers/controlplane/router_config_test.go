package controlplane_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

// The router ConfigMap merge rule (docs/controlplane.md#router-configuration): entries the Controller adds are kept; with an
// equal config version the document is left alone (no write); with an older one the operator's
// entries are restored and the others kept.
func TestRouterConfigMerge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())

	cm := &corev1.ConfigMap{}
	g.Expect(h.exists(cm, "iofog-router")).To(BeTrue())
	g.Expect(cm.OwnerReferences).To(HaveLen(1))
	doc := parseRouterConfig(g, cm.Data["skrouterd.json"])
	g.Expect(doc).To(ContainElement(HaveExactElements("listener", HaveKeyWithValue("name", "amqps"))))

	// The Controller adds a connector (through an Update, as another field manager).
	doc = append(doc, []any{"connector", map[string]any{"name": "agent-1", "host": "10.0.0.9", "port": "45671", "role": "edge"}})
	cm.Data["skrouterd.json"] = encodeRouterConfig(g, doc)
	g.Expect(env.Client.Update(h.ctx, cm)).To(Succeed())
	rv := h.configMap("iofog-router").ResourceVersion
	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.configMap("iofog-router").ResourceVersion).To(Equal(rv), "same config version: untouched")
	g.Expect(h.writes.Load()).To(BeZero())

	// An older template version (and a lost operator listener): merged.
	doc = withoutListener(setConfigVersion(g, doc, "0.9.0"), "amqps")
	cm = h.configMap("iofog-router")
	cm.Data["skrouterd.json"] = encodeRouterConfig(g, doc)
	g.Expect(env.Client.Update(h.ctx, cm)).To(Succeed())
	h.mustBeReady()
	merged := parseRouterConfig(g, h.configMap("iofog-router").Data["skrouterd.json"])
	g.Expect(merged).To(ContainElement(HaveExactElements("listener", HaveKeyWithValue("name", "amqps"))))
	g.Expect(merged).To(ContainElement(HaveExactElements("connector", HaveKeyWithValue("name", "agent-1"))))
	g.Expect(merged).To(ContainElement(HaveExactElements("router", HaveKeyWithValue("metadata", ContainSubstring(`"iofog-config":"1.0.0"`)))))
}

// An unreadable skrouterd.json is reported (InvalidConfiguration), not overwritten.
func TestRouterConfigInvalid(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	cm := h.configMap("iofog-router")
	cm.Data["skrouterd.json"] = "{not json"
	g.Expect(env.Client.Update(h.ctx, cm)).To(Succeed())
	_, err := h.reconcile()
	g.Expect(err).To(MatchError(ContainSubstring("ConfigMap iofog-router holds an invalid skrouterd.json")))
	g.Expect(h.trueCondition().Reason).To(Equal("InvalidConfiguration"))
	g.Expect(h.configMap("iofog-router").Data["skrouterd.json"]).To(Equal("{not json"))
}

func parseRouterConfig(g Gomega, doc string) [][]any {
	var entries [][]any
	g.Expect(json.Unmarshal([]byte(doc), &entries)).To(Succeed())
	return entries
}

func encodeRouterConfig(g Gomega, entries [][]any) string {
	b, err := json.Marshal(entries)
	g.Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// setConfigVersion rewrites the config version inside the router entity's metadata string.
func setConfigVersion(g Gomega, entries [][]any, version string) [][]any {
	for _, e := range entries {
		if e[0] != "router" {
			continue
		}
		attrs := e[1].(map[string]any)
		var meta map[string]any
		g.Expect(json.Unmarshal([]byte(attrs["metadata"].(string)), &meta)).To(Succeed())
		meta["iofog-config"] = version
		b, err := json.Marshal(meta)
		g.Expect(err).NotTo(HaveOccurred())
		attrs["metadata"] = string(b)
	}
	return entries
}

func withoutListener(entries [][]any, name string) [][]any {
	out := entries[:0:0]
	for _, e := range entries {
		if e[0] == "listener" && e[1].(map[string]any)["name"] == name {
			continue
		}
		out = append(out, e)
	}
	return out
}
