package natsconf_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// controllerRoutesConf is a server.conf in the upstream operator's format,
// with routes the Controller added for agents, a duplicate, and the
// $JETSTREAM_PREV_KEY variable upstream leaves in the file.
const controllerRoutesConf = `port: 4222
server_name: $SELFNAME
operator = eyJhbGciOi.old.jwt
jetstream: {
  store_dir: /home/runner/data
  key: "old"
  prev_encryption_key: $JETSTREAM_PREV_KEY
}
cluster: {
  name: iofog
  port: 6222
  routes: ["nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://agent-a.example.com:6222", "nats://10.0.0.7:6222",
    # a comment inside the array
    "nats://agent-a.example.com:6222"]
}
`

var goldenCases = []struct {
	name     string
	params   natsconf.Params
	existing string
	// parsed expectations
	wantRoutes    []any
	wantAdvertise string // "" = absent
	wantMemory    int64
	wantFile      int64
}{
	{
		name:       "minimal",
		params:     params(),
		wantRoutes: []any{"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222"},
		wantMemory: 1_000_000_000, wantFile: 10_000_000_000,
	},
	{
		name:          "external-address-leaf-port",
		params:        params(withExternal("nats.example.com", 30422)),
		wantRoutes:    []any{"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222"},
		wantAdvertise: "nats.example.com:30422",
		wantMemory:    1_000_000_000, wantFile: 10_000_000_000,
	},
	{
		name:     "three-replicas",
		params:   params(withReplicas(3), withExternal("203.0.113.10", 0)),
		existing: controllerRoutesConf,
		wantRoutes: []any{
			"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://nats-2.nats-headless:6222",
			"nats://agent-a.example.com:6222", "nats://10.0.0.7:6222",
		},
		wantAdvertise: "203.0.113.10:7422",
		wantMemory:    1_000_000_000, wantFile: 10_000_000_000,
	},
	{
		name:       "custom-sizes",
		params:     params(withSizes("512Mi", "20Gi")),
		wantRoutes: []any{"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222"},
		wantMemory: 512_000_000, wantFile: 20_000_000_000,
	},
}

func TestRenderGolden(t *testing.T) {
	for _, tt := range goldenCases {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := mustRender(t, tt.params, tt.existing)

			golden := filepath.Join("testdata", tt.name+".conf")
			if *update {
				g.Expect(os.WriteFile(golden, []byte(got), 0o644)).To(Succeed())
			}
			want, err := os.ReadFile(golden)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(string(want)), "run go test ./internal/natsconf -update to accept changes")

			again := mustRender(t, tt.params, got)
			g.Expect(again).To(Equal(got), "rendering over its own output is a fixed point")
		})
	}
}

func TestRenderParsesWithNATSParser(t *testing.T) {
	for _, tt := range goldenCases {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			m := parse(t, mustRender(t, tt.params, tt.existing))

			g.Expect(m).To(HaveKeyWithValue("port", int64(4222)))
			g.Expect(m).To(HaveKeyWithValue("server_name", "nats-0"), "$SELFNAME resolved from the environment")
			g.Expect(m).To(HaveKeyWithValue("pid_file", "/home/runner/run/nats.pid"))
			g.Expect(m).To(HaveKeyWithValue("http_port", int64(8222)))
			g.Expect(m).To(HaveKeyWithValue("operator", testOperatorJWT))
			g.Expect(m).To(HaveKeyWithValue("system_account", testSystemAccount))

			js := block(t, m, "jetstream")
			g.Expect(js).To(Equal(map[string]any{
				"store_dir":           "/home/runner/data",
				"domain":              "iofog",
				"max_memory_store":    tt.wantMemory,
				"max_file_store":      tt.wantFile,
				"cipher":              "chachapoly",
				"key":                 testJetStreamKey,
				"prev_encryption_key": "",
			}))

			cluster := block(t, m, "cluster")
			g.Expect(cluster).To(HaveKeyWithValue("name", "iofog"))
			g.Expect(cluster).To(HaveKeyWithValue("port", int64(6222)))
			g.Expect(cluster).To(HaveKeyWithValue("no_advertise", true))
			g.Expect(cluster).To(HaveKeyWithValue("routes", tt.wantRoutes))
			siteTLS := map[string]any{
				"ca_file":         "/etc/nats/certs/nats-site-server/ca.crt",
				"cert_file":       "/etc/nats/certs/nats-site-server/tls.crt",
				"key_file":        "/etc/nats/certs/nats-site-server/tls.key",
				"verify":          true,
				"handshake_first": true,
				"timeout":         "3s",
			}
			g.Expect(cluster).To(HaveKeyWithValue("tls", siteTLS))

			leaf := block(t, m, "leafnodes")
			g.Expect(leaf).To(HaveKeyWithValue("port", int64(7422)))
			g.Expect(leaf).To(HaveKeyWithValue("tls", siteTLS))
			if tt.wantAdvertise == "" {
				g.Expect(leaf).NotTo(HaveKey("advertise"))
			} else {
				g.Expect(leaf).To(HaveKeyWithValue("advertise", tt.wantAdvertise))
			}

			mqtt := block(t, m, "mqtt")
			g.Expect(mqtt).To(Equal(map[string]any{
				"port": int64(8883),
				"tls": map[string]any{
					"ca_file":         "/etc/nats/certs/nats-mqtt-server/ca.crt",
					"cert_file":       "/etc/nats/certs/nats-mqtt-server/tls.crt",
					"key_file":        "/etc/nats/certs/nats-mqtt-server/tls.key",
					"handshake_first": true,
					"timeout":         "3s",
				},
			}))

			g.Expect(block(t, m, "resolver")).To(Equal(map[string]any{
				"type": "full", "dir": "/home/runner/nats/jwt", "allow_delete": false, "interval": "2m",
			}))
		})
	}
}

func TestRenderEscapesStrings(t *testing.T) {
	tests := []string{
		`key"with"quotes`,
		`back\slash\`,
		"new\nline\ttab\rcr",
		"$NOT_A_VARIABLE # not a comment } ] // neither",
		"ctrl\x00\x01\x1f\x7f",
		"ünïcødé ключ",
	}
	for _, key := range tests {
		t.Run(key, func(t *testing.T) {
			g := NewWithT(t)
			out := mustRender(t, params(func(p *natsconf.Params) {
				p.Namespace = key
				p.Name = key
			}), "")
			m := parse(t, out)
			g.Expect(block(t, m, "jetstream")).To(HaveKeyWithValue("domain", key))
			g.Expect(block(t, m, "cluster")).To(HaveKeyWithValue("name", key))
			// The same string as the JetStream key of the pods' environment: the restart
			// key reads it, and tells it from another.
			k, ok := natsconf.RestartKey(out, podEnv(key))
			g.Expect(ok).To(BeTrue())
			other, _ := natsconf.RestartKey(out, podEnv(key+"x"))
			g.Expect(k).NotTo(Equal(other))
		})
	}
}

func TestRenderLeafAdvertise(t *testing.T) {
	tests := []struct {
		address  string
		leafPort int
		want     string
	}{
		{"nats.example.com", 0, "nats.example.com:7422"},
		{" 198.51.100.4 ", -1, "198.51.100.4:7422"},
		{"nats.example.com", 17422, "nats.example.com:17422"},
		{"2001:db8::4", 0, "[2001:db8::4]:7422"},
		{"[2001:db8::4]", 7000, "[2001:db8::4]:7000"},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			g := NewWithT(t)
			m := parse(t, mustRender(t, params(withExternal(tt.address, tt.leafPort)), ""))
			g.Expect(block(t, m, "leafnodes")).To(HaveKeyWithValue("advertise", tt.want))
		})
	}
}

func TestRenderRejectsInvalidParams(t *testing.T) {
	tests := map[string]natsconf.Params{
		"no name":                  params(func(p *natsconf.Params) { p.Name = "" }),
		"no namespace":             params(func(p *natsconf.Params) { p.Namespace = " " }),
		"no operator JWT":          params(func(p *natsconf.Params) { p.OperatorJWT = "" }),
		"no system account":        params(func(p *natsconf.Params) { p.SystemAccount = "" }),
		"zero replicas":            params(withReplicas(0)),
		"leaf port out of range":   params(withExternal("nats.example.com", 70000)),
		"address with port":        params(withExternal("nats.example.com:7422", 0)),
		"address with space":       params(withExternal("nats example.com", 0)),
		"fractional size":          params(withSizes("1.5Gi", "")),
		"milli size":               params(withSizes("", "100m")),
		"exponent size":            params(withSizes("1e9", "")),
		"config injection in size": params(withSizes("1G\n}\nauthorization { token: x }\njetstream {", "")),
		"peta without i":           params(withSizes("", "10p")),
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := natsconf.Render(p, "")
			g.Expect(err).To(MatchError(natsconf.ErrInvalidParams))
			g.Expect(out).To(BeEmpty())
		})
	}
}
