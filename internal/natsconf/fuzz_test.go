package natsconf_test

import (
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/conf"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// FuzzRender checks that whatever strings reach Params, the rendered file
// parses with the NATS parser and gives the same strings back, that an
// arbitrary previous file never breaks rendering, and that the file never
// holds the JetStream key: whatever the key (the pods' environment), the
// rendered file is the same and its restart key resolves it.
func FuzzRender(f *testing.F) {
	f.Setenv("SELFNAME", "nats-0")
	f.Setenv(natsconf.JetStreamKeyEnv, testJetStreamKey)
	f.Add("iofog", "iofog", testJetStreamKey, "nats.example.com", "")
	f.Add(`a"b`, `c\d`, "e\nf\x00", "2001:db8::1", controllerRoutesConf)
	f.Add("$X", "# y", "} ]", "", "cluster { routes: [$A, \"nats://x:6222\"] }")

	f.Fuzz(func(t *testing.T, name, namespace, key, address, existing string) {
		p := params(func(p *natsconf.Params) {
			p.Name, p.Namespace, p.ExternalAddress = name, namespace, address
		})
		out, err := natsconf.Render(p, existing)
		if err != nil {
			return // invalid params are reported, not rendered
		}
		m, err := conf.Parse(out)
		if err != nil {
			t.Fatalf("rendered file does not parse: %v\n%s", err, out)
		}
		js, _ := m["jetstream"].(map[string]any)
		cluster, _ := m["cluster"].(map[string]any)
		if js["key"] != testJetStreamKey || js["domain"] != namespace || cluster["name"] != name {
			t.Fatalf("strings changed on the way through:\n%s", out)
		}
		if _, ok := natsconf.RestartKey(out, map[string]string{natsconf.JetStreamKeyEnv: key}); !ok {
			t.Fatalf("restart key with JetStream key %q: unreadable", key)
		}
		routes, _ := cluster["routes"].([]any)
		if len(routes) < p.Replicas || !strings.HasPrefix(routes[0].(string), "nats://nats-0.") {
			t.Fatalf("routes %v", routes)
		}
		if again := mustRender(t, p, out); again != out {
			t.Fatalf("not a fixed point:\n%s\n---\n%s", out, again)
		}
	})
}
