package natsconf_test

import (
	"testing"

	"github.com/nats-io/nats-server/v2/conf"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// Placeholder bootstrap values; TestRenderWithRealJWT uses real ones.
const (
	testOperatorJWT   = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJqdGkiOiJ0ZXN0In0.c2lnbmF0dXJl"
	testSystemAccount = "ADS2XZPNJ6NRMWTFZQG2B6KQLWLSVB5CMHVBQYVSOJB4A3KT6T4AVYSX"
	testJetStreamKey  = "q2Vj+cmV0LWtleS1mb3ItdGVzdHMtb25seS0xMjM0NTY3OA=="
)

// params returns valid Params for namespace "iofog", modified by mods.
func params(mods ...func(*natsconf.Params)) natsconf.Params {
	p := natsconf.Params{
		Name:          "iofog",
		Namespace:     "iofog",
		Replicas:      2,
		OperatorJWT:   testOperatorJWT,
		SystemAccount: testSystemAccount,
	}
	for _, m := range mods {
		m(&p)
	}
	return p
}

// podEnv is the environment of the NATS container as far as server.conf refers to it.
func podEnv(jetStreamKey string) map[string]string {
	return map[string]string{natsconf.JetStreamKeyEnv: jetStreamKey}
}

func withReplicas(n int) func(*natsconf.Params) { return func(p *natsconf.Params) { p.Replicas = n } }

func withExternal(addr string, leafPort int) func(*natsconf.Params) {
	return func(p *natsconf.Params) { p.ExternalAddress, p.LeafPort = addr, leafPort }
}

func withSizes(memory, file string) func(*natsconf.Params) {
	return func(p *natsconf.Params) { p.MemoryStore, p.FileStore = memory, file }
}

func mustRender(tb testing.TB, p natsconf.Params, existing string) string {
	tb.Helper()
	out, err := natsconf.Render(p, existing)
	if err != nil {
		tb.Fatalf("Render: %v", err)
	}
	return out
}

// parse reads server.conf with the NATS server's own parser. The parser
// resolves $SELFNAME and $JETSTREAM_KEY from the environment when the file
// does not define them (conf.lookupVariable falls back to os.LookupEnv), which
// is what the NATS image relies on; t.Setenv provides them here as the pod's
// environment does.
func parse(t *testing.T, serverConf string) map[string]any {
	t.Helper()
	t.Setenv("SELFNAME", "nats-0")
	t.Setenv(natsconf.JetStreamKeyEnv, testJetStreamKey)
	m, err := conf.Parse(serverConf)
	if err != nil {
		t.Fatalf("conf.Parse: %v\n%s", err, serverConf)
	}
	return m
}

func block(tb testing.TB, m map[string]any, key string) map[string]any {
	tb.Helper()
	b, ok := m[key].(map[string]any)
	if !ok {
		tb.Fatalf("%s is %T, want a block", key, m[key])
	}
	return b
}
