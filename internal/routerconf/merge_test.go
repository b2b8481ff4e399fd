package routerconf_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/routerconf"
)

// Fixture entries, as the Controller or an admin would add them.
var (
	adminConnector = pair("connector", obj{"name": "to-hub", "role": "inter-router", "host": "hub.example.com", "port": "55671", "cost": 1})
	adminListener  = pair("listener", obj{"name": "admin-amqp", "port": 5673, "host": "0.0.0.0"})
	adminProfile   = pair("sslProfile", obj{"name": "hub-client", "caCertFile": "/etc/hub/ca.crt"})
	adminTCP       = pair("tcpListener", obj{"name": "svc-a", "address": "svc-a", "port": "8080", "siteId": "x<&>y"})
	adminAddress   = pair("address", obj{"prefix": "closest", "distribution": "closest"})
	adminLog       = pair("log", obj{"module": "DEFAULT", "enable": "trace+"})
)

func TestMergeKeepsExistingWhenVersionEqual(t *testing.T) {
	g := NewWithT(t)
	desired := render(t, "iofog")
	// Same version, but an admin tuned an owned listener and added entries:
	// nothing may be touched.
	existing := withEntries(t, desired,
		func(es []any) []any {
			es[7] = pair("listener", obj{"name": "amqps", "port": 15671, "sslProfile": "router-local-server"})
			return append(es, adminConnector, adminListener, adminProfile, adminAddress)
		})

	out, changed, err := routerconf.Merge(existing, desired)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	g.Expect(out).To(Equal(existing))
}

func TestMergeOnVersionChange(t *testing.T) {
	desired := render(t, "iofog")
	desiredEntries := decode(t, desired)

	tests := []struct {
		name     string
		existing []byte
		// wantKept are the existing entries expected after the template's, in order.
		wantKept []any
	}{
		{
			name: "older template: owned entries replaced, admin entries kept in order",
			existing: doc(t,
				routerEntry(t, "0.9.0"),
				pair("site", obj{"name": "default-router", "namespace": "old"}),
				adminConnector,
				pair("sslProfile", obj{"name": "system-default", "certFile": "/old/bundle.crt"}),
				pair("sslProfile", obj{"name": "router-site-server", "certFile": "/old/tls.crt"}),
				adminProfile,
				pair("listener", obj{"name": "amqps", "port": 1234}),
				pair("listener", obj{"name": "@9090", "port": 9090}),
				adminListener,
				adminTCP,
				adminAddress,
				adminLog,
				pair("address", obj{"prefix": "mc", "distribution": "multicast"}),
			),
			wantKept: []any{adminConnector, adminProfile, adminListener, adminTCP},
		},
		{
			name: "upstream duplicates of system-default and of admin entries collapse",
			existing: doc(t,
				routerEntry(t, "0.9.0"),
				pair("sslProfile", obj{"name": "system-default", "certFile": "/etc/pki/tls/certs/ca-bundle.crt"}),
				pair("sslProfile", obj{"name": "system-default", "certFile": "/etc/pki/tls/certs/ca-bundle.crt"}),
				adminConnector,
				adminConnector,
				pair("connector", obj{"name": "to-hub", "host": "changed.example.com"}),
				adminProfile,
				adminProfile,
			),
			wantKept: []any{adminConnector, adminProfile},
		},
		{
			name: "metadata without config-version (upstream pot-config key)",
			existing: doc(t,
				pair("router", obj{"id": "default-router", "metadata": `{"id":"default-router","pot-config":"1.0.0"}`}),
				adminConnector,
			),
			wantKept: []any{adminConnector},
		},
		{
			name:     "metadata that is not a JSON string",
			existing: doc(t, pair("router", obj{"id": "default-router", "metadata": obj{"iofog-config": "1.0.0"}}), adminTCP),
			wantKept: []any{adminTCP},
		},
		{
			name:     "no router entity at all",
			existing: doc(t, adminListener),
			wantKept: []any{adminListener},
		},
		{
			name:     "empty array",
			existing: []byte("[]"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, changed, err := routerconf.Merge(tt.existing, desired)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(changed).To(BeTrue())

			got := decode(t, out)
			g.Expect(got[:len(desiredEntries)]).To(Equal(desiredEntries), "template entries first, from desired")
			g.Expect(got[len(desiredEntries):]).To(Equal(decode(t, doc(t, tt.wantKept...))))
			g.Expect(countEntity(got, "sslProfile", "system-default")).To(Equal(1))

			again, changed, err := routerconf.Merge(out, desired)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(changed).To(BeFalse(), "idempotent")
			g.Expect(again).To(Equal(out))
		})
	}
}

// Without the version short-circuit (a desired document that carries no
// config-version) the merge itself must still be a fixed point.
func TestMergeIdempotentWithoutVersion(t *testing.T) {
	g := NewWithT(t)
	desired := withEntries(t, render(t, "iofog"), func(es []any) []any {
		es[0] = pair("router", obj{"id": "default-router", "mode": "interior", "metadata": "{}"})
		return es
	})
	existing := doc(t, routerEntry(t, "0.9.0"), adminConnector, adminConnector, adminAddress, adminProfile)

	first, changed, err := routerconf.Merge(existing, desired)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())

	second, changed, err := routerconf.Merge(first, desired)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	g.Expect(second).To(Equal(first))

	// Same content, different formatting: not a change either.
	compact, err := json.Marshal(decodeAny(t, first))
	g.Expect(err).NotTo(HaveOccurred())
	third, changed, err := routerconf.Merge(compact, desired)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	g.Expect(third).To(Equal(compact), "existing returned as-is")
}

func TestMergeKeepsAdminEntryContentVerbatim(t *testing.T) {
	g := NewWithT(t)
	existing := []byte(`[["router",{"id":"default-router","metadata":"{}"}],` +
		`["tcpListener",{"port":"8080","name":"svc-a","address":"a<b>&c","extra":{"z":1,"a":[1,2]}}]]`)
	out, changed, err := routerconf.Merge(existing, render(t, "iofog"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	g.Expect(string(out)).To(ContainSubstring(`"port": "8080",`+"\n"+`            "name": "svc-a",`), "key order kept")
	g.Expect(string(out)).To(ContainSubstring(`"address": "a<b>&c"`), "no HTML escaping")
}

func TestMergeEmptyExistingYieldsDesired(t *testing.T) {
	g := NewWithT(t)
	desired := render(t, "iofog")
	for _, existing := range [][]byte{nil, []byte(""), []byte(" \n\t")} {
		out, changed, err := routerconf.Merge(existing, desired)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(changed).To(BeTrue())
		g.Expect(out).To(Equal(desired))
	}
}

func TestMergeRejectsInvalidExisting(t *testing.T) {
	desired := render(t, "iofog")
	tests := map[string]string{
		"not JSON":                  "listener: amqp",
		"truncated":                 `[["listener",{"name":"amqp"}],`,
		"object":                    `{"router":{}}`,
		"null":                      `null`,
		"entry not a pair":          `[["listener"]]`,
		"entry with three elements": `[["listener",{},{}]]`,
		"entry not an array":        `["listener"]`,
		"type not a string":         `[[1,{"name":"a"}]]`,
		"empty type":                `[["",{"name":"a"}]]`,
		"attributes null":           `[["listener",null]]`,
		"attributes an array":       `[["listener",["name","a"]]]`,
	}
	for name, existing := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, changed, err := routerconf.Merge([]byte(existing), desired)
			g.Expect(err).To(MatchError(routerconf.ErrInvalidExisting))
			g.Expect(changed).To(BeFalse())
			g.Expect(out).To(BeNil())
		})
	}
}

func TestMergeRejectsInvalidDesired(t *testing.T) {
	g := NewWithT(t)
	_, _, err := routerconf.Merge(render(t, "iofog"), []byte("{"))
	g.Expect(err).To(HaveOccurred())
	g.Expect(err).NotTo(MatchError(routerconf.ErrInvalidExisting))
}

type obj = map[string]any

func pair(typ string, attrs any) any { return []any{typ, attrs} }

func routerEntry(tb testing.TB, version string) any {
	tb.Helper()
	metadata, err := json.Marshal(obj{"id": "default-router", routerconf.ConfigVersionKey: version})
	if err != nil {
		tb.Fatal(err)
	}
	return pair("router", obj{"id": "default-router", "mode": "interior", "metadata": string(metadata)})
}

func doc(tb testing.TB, entries ...any) []byte {
	tb.Helper()
	if entries == nil {
		entries = []any{}
	}
	out, err := json.Marshal(entries)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func render(tb testing.TB, namespace string) []byte {
	tb.Helper()
	out, err := routerconf.Render(namespace)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// withEntries decodes d, lets edit change its entries and re-encodes it.
func withEntries(tb testing.TB, d []byte, edit func([]any) []any) []byte {
	tb.Helper()
	return doc(tb, edit(decodeAny(tb, d).([]any))...)
}

func decodeAny(tb testing.TB, d []byte) any {
	tb.Helper()
	var v any
	if err := json.Unmarshal(d, &v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func countEntity(es []entity, typ, name string) int {
	n := 0
	for _, e := range es {
		if e.Type == typ && e.Attrs["name"] == name {
			n++
		}
	}
	return n
}
