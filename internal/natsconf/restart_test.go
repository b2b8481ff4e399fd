package natsconf_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// The restart key ignores what a reload applies (the routes: more replicas, a route the
// Controller added, a comment) and changes with what nats-server refuses to reload (the leaf
// advertise address, the operator JWT, the JetStream key in the pods' environment, a store
// limit).
func TestRestartKey(t *testing.T) {
	g := NewWithT(t)
	key := func(p natsconf.Params, existing string) string {
		k, ok := natsconf.RestartKey(mustRender(t, p, existing), podEnv(testJetStreamKey))
		g.Expect(ok).To(BeTrue())
		return k
	}
	base := key(params(withExternal("nats.example.com", 0)), "")
	g.Expect(base).To(Equal(key(params(withExternal("nats.example.com", 0)), "")), "deterministic")

	withRoute := mustRender(t, params(withExternal("nats.example.com", 0)), "")
	withRoute = strings.Replace(withRoute, `"nats://nats-1.nats-headless:6222"`,
		`"nats://nats-1.nats-headless:6222", "nats://edge-hub.example.com:6222"`, 1)
	reloadable := map[string]string{
		"three replicas":            mustRender(t, params(withExternal("nats.example.com", 0), withReplicas(3)), ""),
		"a route of the Controller": withRoute,
		"a comment":                 "# edited\n" + mustRender(t, params(withExternal("nats.example.com", 0)), ""),
	}
	for name, conf := range reloadable {
		k, ok := natsconf.RestartKey(conf, podEnv(testJetStreamKey))
		g.Expect(ok).To(BeTrue(), name)
		g.Expect(k).To(Equal(base), name)
	}
	otherKey, ok := natsconf.RestartKey(mustRender(t, params(withExternal("nats.example.com", 0)), ""), podEnv("b3RoZXI="))
	g.Expect(ok).To(BeTrue())
	g.Expect(otherKey).NotTo(Equal(base), "another JetStream key in the pods' environment")
	restart := map[string]natsconf.Params{
		"another advertise address": params(withExternal("nats2.example.com", 0)),
		"no advertise address":      params(),
		"another operator":          params(withExternal("nats.example.com", 0), func(p *natsconf.Params) { p.OperatorJWT += "x" }),
		"another file store":        params(withExternal("nats.example.com", 0), withSizes("", "20Gi")),
	}
	for name, p := range restart {
		g.Expect(key(p, "")).NotTo(Equal(base), name)
	}
	_, ok = natsconf.RestartKey("", nil)
	g.Expect(ok).To(BeFalse())
	_, ok = natsconf.RestartKey("cluster {", nil)
	g.Expect(ok).To(BeFalse())
}

// A file of an earlier version held the key in clear; the same key in the pods' environment
// gives the same restart key, so the operator's upgrade rolls no NATS pod, while another key
// does.
func TestRestartKeyOfAFileWithTheKeyInClear(t *testing.T) {
	g := NewWithT(t)
	current := mustRender(t, params(withExternal("nats.example.com", 0)), "")
	g.Expect(current).To(ContainSubstring("key: $JETSTREAM_KEY\n"))
	g.Expect(current).NotTo(ContainSubstring(testJetStreamKey))
	earlier := strings.Replace(current, "key: $JETSTREAM_KEY\n", "key: \""+testJetStreamKey+"\"\n", 1)
	g.Expect(earlier).NotTo(Equal(current))

	want, ok := natsconf.RestartKey(current, podEnv(testJetStreamKey))
	g.Expect(ok).To(BeTrue())
	got, ok := natsconf.RestartKey(earlier, nil)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(want), "the same key, in clear or named")
	other, _ := natsconf.RestartKey(current, podEnv("b3RoZXI="))
	g.Expect(other).NotTo(Equal(got), "another key")
}
