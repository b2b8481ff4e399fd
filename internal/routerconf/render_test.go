package routerconf_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/routerconf"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestRenderGolden(t *testing.T) {
	g := NewWithT(t)
	got, err := routerconf.Render("iofog")
	g.Expect(err).NotTo(HaveOccurred())

	golden := filepath.Join("testdata", "skrouterd.json")
	if *update {
		g.Expect(os.WriteFile(golden, got, 0o644)).To(Succeed())
	}
	want, err := os.ReadFile(golden)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(string(want)), "run go test ./internal/routerconf -update to accept changes")
}

func TestRender(t *testing.T) {
	g := NewWithT(t)
	out, err := routerconf.Render("team-a")
	g.Expect(err).NotTo(HaveOccurred())

	again, err := routerconf.Render("team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(out), "deterministic")

	entries := decode(t, out)
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.Type+"/"+e.ID())
	}
	g.Expect(ids).To(Equal([]string{
		"router/default-router",
		"site/default-router",
		"sslProfile/system-default",
		"sslProfile/router-site-server",
		"sslProfile/router-local-server",
		"listener/iofog-router-edge",
		"listener/amqp",
		"listener/amqps",
		"listener/@9090",
		"listener/iofog-router-inter-router",
		"address/mc",
		"log/ROUTER_CORE",
	}))

	router := entries[0].Attrs
	g.Expect(router).To(HaveKeyWithValue("mode", "interior"))
	g.Expect(router).To(HaveKeyWithValue("helloMaxAgeSeconds", "3"))
	metadataString, ok := router["metadata"].(string)
	g.Expect(ok).To(BeTrue(), "metadata is a JSON string")
	var metadata map[string]any
	g.Expect(json.Unmarshal([]byte(metadataString), &metadata)).To(Succeed())
	g.Expect(metadata).To(Equal(map[string]any{
		"id": "default-router", "version": "iofog", "platform": "kubernetes",
		routerconf.ConfigVersionKey: routerconf.ConfigVersion,
	}))

	g.Expect(entries[1].Attrs).To(HaveKeyWithValue("namespace", "team-a"))
	g.Expect(entries[3].Attrs).To(HaveKeyWithValue("privateKeyFile", "/etc/skupper-router-certs/router-site-server/tls.key"))
	g.Expect(entries[5].Attrs).To(And(
		HaveKeyWithValue("role", "edge"), HaveKeyWithValue("port", float64(45671)),
		HaveKeyWithValue("sslProfile", "router-site-server"), HaveKeyWithValue("saslMechanisms", "EXTERNAL"),
		HaveKeyWithValue("authenticatePeer", true)))
	g.Expect(entries[6].Attrs).To(Equal(map[string]any{"name": "amqp", "host": "localhost", "port": float64(5672)}))
	g.Expect(entries[7].Attrs).To(And(HaveKeyWithValue("port", float64(5671)), HaveKeyWithValue("sslProfile", "router-local-server")))
	g.Expect(entries[8].Attrs).To(Equal(map[string]any{
		"name": "@9090", "role": "normal", "port": float64(9090),
		"http": true, "httpRootDir": "disabled", "healthz": true, "metrics": true,
	}))
	g.Expect(entries[9].Attrs).To(And(HaveKeyWithValue("role", "inter-router"), HaveKeyWithValue("port", float64(55671))))
	g.Expect(entries[10].Attrs).To(Equal(map[string]any{"prefix": "mc", "distribution": "multicast"}))
	g.Expect(entries[11].Attrs).To(Equal(map[string]any{"module": "ROUTER_CORE", "enable": "error+"}))
}

func TestRenderRejectsEmptyNamespace(t *testing.T) {
	g := NewWithT(t)
	_, err := routerconf.Render("")
	g.Expect(err).To(HaveOccurred())
}

// entity is a decoded [type, {attributes}] pair.
type entity struct {
	Type  string
	Attrs map[string]any
}

// ID is the entity's name, or its prefix/module/id for unnamed entities.
func (e entity) ID() string {
	for _, k := range []string{"name", "prefix", "module", "id"} {
		if v, ok := e.Attrs[k].(string); ok {
			return v
		}
	}
	return ""
}

func decode(tb testing.TB, doc []byte) []entity {
	tb.Helper()
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(doc, &pairs); err != nil {
		tb.Fatalf("decode skrouterd.json: %v\n%s", err, doc)
	}
	out := make([]entity, 0, len(pairs))
	for _, p := range pairs {
		var e entity
		if err := json.Unmarshal(p[0], &e.Type); err != nil {
			tb.Fatalf("decode entity type: %v", err)
		}
		if err := json.Unmarshal(p[1], &e.Attrs); err != nil {
			tb.Fatalf("decode %s attributes: %v", e.Type, err)
		}
		out = append(out, e)
	}
	return out
}
