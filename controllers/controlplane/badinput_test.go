package controlplane_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// The ControlPlane bad-input matrix, part one: every field a user writes, with each
// kind of wrong value the API server can judge, is refused at admission by the CRD's schema and
// CEL rules, with a message that names the field. Each case starts from a ControlPlane the API
// server admits (checked first, so a refusal is the case's doing). Values the API server cannot
// judge (a Secret that does not exist, a key it lacks, a bad certificate) are part two,
// TestBadInputConditions. TestAdmissionMatchesTheRenderer holds the cases where admission and
// the renderer must agree (console port, JetStream sizes, wildcard hosts).
func TestBadInputAdmission(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	type mod = func(*datasancev3.ControlPlane)
	external := func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth = datasancev3.Auth{Mode: datasancev3.AuthModeExternal, IssuerURL: "https://idp.example.com/realms/pot",
			Client: &datasancev3.OIDCClient{ID: "operator", SecretRef: secretRef("oidc", "secret")}}
	}
	cases := []struct {
		name  string
		base  []mod // applied before the wrong value; the result must be admitted
		wrong mod
		field string // a substring of the refusal
	}{
		// metadata
		{name: "name longer than 63", wrong: func(cp *datasancev3.ControlPlane) { cp.Name = strings.Repeat("a", 64) }, field: "metadata.name"},
		// spec.auth
		{name: "auth.mode unknown", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Mode = "ldap" }, field: "spec.auth.mode"},
		{name: "embedded without username", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Bootstrap.Username = "" }, field: "spec.auth.bootstrap.username"},
		{name: "embedded without password", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Bootstrap.Password = "" }, field: "spec.auth.bootstrap.password"},
		{name: "username longer than 255", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Bootstrap.Username = strings.Repeat("u", 256) }, field: "spec.auth.bootstrap.username"},
		{name: "external without issuerUrl", base: []mod{external}, wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.IssuerURL = "" }, field: "spec.auth.issuerUrl"},
		{name: "issuerUrl not http(s)", base: []mod{external}, wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.IssuerURL = "ftp://idp.example.com" }, field: "spec.auth.issuerUrl"},
		{name: "issuerUrl not a URL", base: []mod{external}, wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.IssuerURL = "idp example" }, field: "spec.auth.issuerUrl"},
		{name: "external without client id", base: []mod{external}, wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Client.ID = "" }, field: "spec.auth.client"},
		{name: "external without client secret", base: []mod{external}, wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Client.SecretRef = nil }, field: "spec.auth.client"},
		{name: "client secret inline and by reference", base: []mod{external}, wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Client.Secret = "inline" }, field: "spec.auth.client.secretRef"},
		{name: "client secretRef without name", base: []mod{external}, wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Client.SecretRef.Name = "" }, field: "spec.auth.client.secretRef"},
		{name: "auth caSecretRef without name", base: []mod{external}, wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.CASecretRef = secretRef("", "ca.crt") }, field: "spec.auth.caSecretRef"},
		{name: "auth caSecretRef in embedded mode", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.CASecretRef = secretRef("idp-ca", "ca.crt") }, field: "spec.auth.caSecretRef"},
		{name: "sessionStore.type unknown", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Auth.SessionStore = &datasancev3.SessionStore{Type: "redis"}
		}, field: "spec.auth.sessionStore.type"},
		{name: "sessionStore.ttlMs zero", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Auth.SessionStore = &datasancev3.SessionStore{TTLMs: ptr.To[int32](0)}
		}, field: "spec.auth.sessionStore.ttlMs"},
		{name: "session secret inline and by reference", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Auth.SessionStore = &datasancev3.SessionStore{Secret: "inline", SecretRef: secretRef("session", "secret")}
		}, field: "spec.auth.sessionStore.secretRef"},
		{name: "rateLimit.maxRequestsPerWindow zero", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Auth.RateLimit = &datasancev3.RateLimit{MaxRequestsPerWindow: ptr.To[int32](0)}
		}, field: "spec.auth.rateLimit.maxRequestsPerWindow"},
		{name: "rateLimit.windowMs negative", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Auth.RateLimit = &datasancev3.RateLimit{WindowMs: ptr.To[int32](-1)}
		}, field: "spec.auth.rateLimit.windowMs"},
		{name: "tokenTtl zero", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Auth.TokenTTL = &datasancev3.TokenTTL{AccessTokenTTLSeconds: ptr.To[int32](0)}
		}, field: "spec.auth.tokenTtl.accessTokenTtlSeconds"},
		{name: "oidcTtl zero", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Auth.OIDCTTL = &datasancev3.OIDCTTL{GrantTTLSeconds: ptr.To[int32](0)}
		}, field: "spec.auth.oidcTtl.grantTtlSeconds"},
		// spec.database
		{name: "database.port above 65535", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Port = 70000 }, field: "spec.database.port"},
		{name: "database.port negative", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Port = -1 }, field: "spec.database.port"},
		{name: "database.host longer than 253", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Host = strings.Repeat("h", 254) }, field: "spec.database.host"},
		{name: "database.provider not lower case", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Provider = "Postgres" }, field: "spec.database.provider"},
		{name: "database.host without a provider", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Provider = "" }, field: "spec.database.provider"},
		{name: "database.host with provider sqlite", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Provider = "sqlite" }, field: "spec.database.provider"},
		{name: "database.provider postgres without a host", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Host = "" }, field: "spec.database.host"},
		{name: "database.ca not base64", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.CA = ptr.To("-----BEGIN CERTIFICATE-----") }, field: "spec.database.ca"},
		{name: "database password inline and by reference", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.PasswordSecretRef = secretRef("db", "password") }, field: "spec.database.passwordSecretRef"},
		{name: "database passwordSecretRef without name", base: []mod{func(cp *datasancev3.ControlPlane) { cp.Spec.Database.Password = "" }},
			wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Database.PasswordSecretRef = secretRef("", "password") }, field: "spec.database.passwordSecretRef"},
		// spec.replicas
		{name: "two Controllers on SQLite", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Database = datasancev3.Database{}
			cp.Spec.Replicas.Controller = 2
		}, field: "spec.replicas.controller"},
		{name: "replicas.controller negative", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = -1 }, field: "spec.replicas.controller"},
		{name: "replicas.nats one", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To[int32](1) }, field: "spec.replicas.nats"},
		// spec.images
		{name: "images.pullSecret longer than 253", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Images.PullSecret = strings.Repeat("s", 254) }, field: "spec.images.pullSecret"},
		// spec.services
		{name: "service type ExternalName", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Services.Nats = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeExternalName}
		}, field: "spec.services.nats.type"},
		{name: "externalTrafficPolicy unknown", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Services.Router = &datasancev3.ServiceSpec{ExternalTrafficPolicy: "Nearest"}
		}, field: "spec.services.router.externalTrafficPolicy"},
		{name: "service address longer than 253", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Services.Controller = &datasancev3.ServiceSpec{Address: strings.Repeat("a", 254)}
		}, field: "spec.services.controller.address"},
		{name: "router not LoadBalancer without an ingress address", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Services.Router = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
		}, field: "spec.ingresses.router.address"},
		{name: "controller ClusterIP without an ingress host", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Services.Controller = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
		}, field: "spec.ingresses.controller.host"},
		{name: "controller NodePort without publicUrl", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Services.Controller = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeNodePort}
		}, field: "spec.controller.publicUrl"},
		// spec.ingresses
		{name: "ingress host not a DNS name", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Ingresses.Controller = &datasancev3.ControllerIngress{Host: "Bad_Host.example.com"}
		}, field: "spec.ingresses.controller.host"},
		{name: "ingress secretName not a DNS subdomain", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Ingresses.Controller = &datasancev3.ControllerIngress{Host: "c.example.com", SecretName: "Bad_Secret"}
		}, field: "spec.ingresses.controller.secretName"},
		{name: "router messagePort above 65535", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Ingresses.Router = &datasancev3.RouterIngress{MessagePort: 70000}
		}, field: "spec.ingresses.router.messagePort"},
		{name: "nats leafPort negative", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Ingresses.Nats = &datasancev3.NatsIngress{LeafPort: -1} }, field: "spec.ingresses.nats.leafPort"},
		// spec.controller
		{name: "publicUrl not http(s)", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.PublicURL = "tcp://controller.example.com" }, field: "spec.controller.publicUrl"},
		{name: "consoleUrl not a URL", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.ConsoleURL = "console" }, field: "spec.controller.consoleUrl"},
		{name: "consolePort above 65535", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.ConsolePort = 70000 }, field: "spec.controller.consolePort"},
		{name: "https without secretName", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.HTTPS = ptr.To(true) }, field: "spec.controller.secretName"},
		{name: "controller secretName not a DNS subdomain", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Controller.HTTPS, cp.Spec.Controller.SecretName = ptr.To(true), "Controller_TLS"
		}, field: "spec.controller.secretName"},
		{name: "logLevel unknown", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.LogLevel = "verbose" }, field: "spec.controller.logLevel"},
		// spec.events
		{name: "events.retentionDays negative", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Events.RetentionDays = -1 }, field: "spec.events.retentionDays"},
		{name: "events.cleanupInterval negative", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Events.CleanupInterval = -1 }, field: "spec.events.cleanupInterval"},
		// spec.vault
		{name: "vault.provider unknown", wrong: func(cp *datasancev3.ControlPlane) { cp.Spec.Vault = &datasancev3.Vault{Provider: "keepass"} }, field: "spec.vault.provider"},
		{name: "vault token inline and by reference", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Vault = &datasancev3.Vault{Hashicorp: &datasancev3.VaultHashicorp{Token: "t", TokenSecretRef: secretRef("vault", "token")}}
		}, field: "spec.vault.hashicorp.tokenSecretRef"},
		{name: "vault aws access key inline and by reference", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Vault = &datasancev3.Vault{AWS: &datasancev3.VaultAWS{AccessKey: "k", AccessKeySecretRef: secretRef("aws", "key")}}
		}, field: "spec.vault.aws.accessKeySecretRef"},
		{name: "vault aws access key id inline and by reference", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Vault = &datasancev3.Vault{AWS: &datasancev3.VaultAWS{AccessKeyID: "AKIA", AccessKeyIDSecretRef: secretRef("aws", "id")}}
		}, field: "spec.vault.aws.accessKeyIdSecretRef"},
		{name: "vault azure client secret inline and by reference", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Vault = &datasancev3.Vault{Azure: &datasancev3.VaultAzure{ClientSecret: "s", ClientSecretRef: secretRef("azure", "secret")}}
		}, field: "spec.vault.azure.clientSecretRef"},
		{name: "vault google credentials inline and by reference", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Vault = &datasancev3.Vault{Google: &datasancev3.VaultGoogle{Credentials: "{}", CredentialsSecretRef: secretRef("google", "key.json")}}
		}, field: "spec.vault.google.credentialsSecretRef"},
		{name: "vault tokenSecretRef without name", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Vault = &datasancev3.Vault{Hashicorp: &datasancev3.VaultHashicorp{TokenSecretRef: secretRef("", "token")}}
		}, field: "spec.vault.hashicorp.tokenSecretRef"},
		// spec.nats
		{name: "jetStream storageSize with a fraction", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Nats = &datasancev3.Nats{JetStream: &datasancev3.JetStream{StorageSize: "1.5Gi"}}
		}, field: "spec.nats.jetStream.storageSize"},
		{name: "jetStream memoryStoreSize in milli", wrong: func(cp *datasancev3.ControlPlane) {
			cp.Spec.Nats = &datasancev3.Nats{JetStream: &datasancev3.JetStream{MemoryStoreSize: "10m"}}
		}, field: "spec.nats.jetStream.memoryStoreSize"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			valid := h.controlPlane(tc.base...)
			g.Expect(env.Client.Create(h.ctx, valid.DeepCopy(), client.DryRunAll)).To(Succeed(), "the base ControlPlane is admitted")
			bad := valid.DeepCopy()
			tc.wrong(bad)
			err := env.Client.Create(h.ctx, bad, client.DryRunAll)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "refused as invalid: %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.field))
		})
	}
}

// secretRef selects key of Secret name.
func secretRef(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

// The ControlPlane bad-input matrix, part two: wrong values the API server admits because it
// cannot judge them (a reference to a Secret that does not exist or lacks the key, a
// bring-your-own CA Secret that holds no certificate). With the reconciler in a manager, each
// ends in a True condition with its specific reason and a Warning Event of that reason, never a
// panic (the manager would crash the test), and then neither a hot loop nor a write: over a
// window the passes are counted (at most one, the status write's own echo) and nothing is
// written. The Controller's credential Secrets and Deployment are never written half-resolved.
// A creation of the missing Secret (an event, not a timer) brings the ControlPlane to ready.
func TestBadInputConditions(t *testing.T) {
	t.Parallel()
	type fixture struct {
		secrets map[string]map[string]string // Secrets to create before the ControlPlane
		mod     func(*datasancev3.ControlPlane)
		// idp switches the ControlPlane to external mode with an identity provider whose CA is
		// trusted only through spec.auth.caSecretRef = idp-ca/ca.crt (h.idpCA is that CA).
		idp bool
		// fix repairs the input; the ControlPlane must then become ready.
		fix func(h *harness)
	}
	withRef := func(set func(*datasancev3.ControlPlane, *corev1.SecretKeySelector), name, key string) func(*datasancev3.ControlPlane) {
		return func(cp *datasancev3.ControlPlane) { set(cp, secretRef(name, key)) }
	}
	dbRef := func(cp *datasancev3.ControlPlane, r *corev1.SecretKeySelector) {
		cp.Spec.Database.Password, cp.Spec.Database.PasswordSecretRef = "", r
	}
	bootstrapRef := func(cp *datasancev3.ControlPlane, r *corev1.SecretKeySelector) {
		cp.Spec.Auth.Bootstrap.Password, cp.Spec.Auth.Bootstrap.PasswordSecretRef = "", r
	}
	sessionRef := func(cp *datasancev3.ControlPlane, r *corev1.SecretKeySelector) {
		cp.Spec.Auth.SessionStore = &datasancev3.SessionStore{Type: "database", SecretRef: r}
	}
	vaultRef := func(cp *datasancev3.ControlPlane, r *corev1.SecretKeySelector) {
		cp.Spec.Vault = &datasancev3.Vault{Hashicorp: &datasancev3.VaultHashicorp{Address: "https://vault.example.com", TokenSecretRef: r}}
	}
	createSecret := func(name string, data map[string]string) func(h *harness) {
		return func(h *harness) { h.createSecret(name, data) }
	}
	addKey := func(name, key, value string) func(h *harness) {
		return func(h *harness) {
			s := h.userSecret(name)
			s.Data[key] = []byte(value)
			h.g.Expect(env.Client.Update(h.ctx, s)).To(Succeed())
		}
	}
	putIdentityProviderCA := func(h *harness) {
		if !h.exists(&corev1.Secret{}, "idp-ca") {
			h.createSecret("idp-ca", map[string]string{"ca.crt": string(h.idpCA)})
			return
		}
		s := h.userSecret("idp-ca")
		s.Data["ca.crt"] = h.idpCA
		h.g.Expect(env.Client.Update(h.ctx, s)).To(Succeed())
	}
	cases := []struct {
		name   string
		in     fixture
		reason string
		// credentials: the Controller component's objects must not exist while the input is wrong.
		credentials bool
	}{
		{name: "bootstrap passwordSecretRef: no Secret", reason: datasancev3.ReasonSecretNotFound, credentials: true, in: fixture{
			mod: withRef(bootstrapRef, "bootstrap", "password"), fix: createSecret("bootstrap", map[string]string{"password": fake.DefaultPassword})}},
		{name: "bootstrap passwordSecretRef: no key", reason: datasancev3.ReasonSecretKeyNotFound, credentials: true, in: fixture{
			secrets: map[string]map[string]string{"bootstrap": {"other": "x"}},
			mod:     withRef(bootstrapRef, "bootstrap", "password"), fix: addKey("bootstrap", "password", fake.DefaultPassword)}},
		{name: "database passwordSecretRef: no Secret", reason: datasancev3.ReasonSecretNotFound, credentials: true, in: fixture{
			mod: withRef(dbRef, "database", "password"), fix: createSecret("database", map[string]string{"password": "db-password"})}},
		{name: "database passwordSecretRef: no key", reason: datasancev3.ReasonSecretKeyNotFound, credentials: true, in: fixture{
			secrets: map[string]map[string]string{"database": {"pass": "x"}},
			mod:     withRef(dbRef, "database", "password"), fix: addKey("database", "password", "db-password")}},
		{name: "sessionStore secretRef: no Secret", reason: datasancev3.ReasonSecretNotFound, credentials: true, in: fixture{
			mod: withRef(sessionRef, "session", "secret"), fix: createSecret("session", map[string]string{"secret": "cookie-key"})}},
		{name: "vault tokenSecretRef: no key", reason: datasancev3.ReasonSecretKeyNotFound, credentials: true, in: fixture{
			secrets: map[string]map[string]string{"vault": {}},
			mod:     withRef(vaultRef, "vault", "token"), fix: addKey("vault", "token", "hvs.token")}},
		{name: "auth caSecretRef: no Secret", reason: datasancev3.ReasonSecretNotFound, in: fixture{
			idp: true, fix: putIdentityProviderCA}},
		{name: "auth caSecretRef: no key", reason: datasancev3.ReasonSecretKeyNotFound, in: fixture{
			secrets: map[string]map[string]string{"idp-ca": {"other": "x"}}, idp: true, fix: putIdentityProviderCA}},
		{name: "auth caSecretRef: not PEM", reason: datasancev3.ReasonInvalidCertificate, in: fixture{
			secrets: map[string]map[string]string{"idp-ca": {"ca.crt": "not a certificate"}}, idp: true, fix: putIdentityProviderCA}},
		{name: "bring-your-own router CA: not PEM", reason: datasancev3.ReasonInvalidCertificate, in: fixture{
			secrets: map[string]map[string]string{"router-site-ca": {"tls.crt": "not a certificate", "tls.key": "not a key"}},
			fix: func(h *harness) {
				s := h.userSecret("router-site-ca")
				s.Data = h.createTLSSecretData("router-site-ca")
				h.g.Expect(env.Client.Update(h.ctx, s)).To(Succeed())
			}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each case has its own namespace, manager, fake Controller and counters; most of a
			// case is waiting (for passes, for a quiet window), so the cases overlap.
			t.Parallel()
			h := newHarness(t)
			g := h.g
			for name, data := range tc.in.secrets {
				h.createSecret(name, data)
			}
			h.startManager()
			mods := []func(*datasancev3.ControlPlane){}
			if tc.in.mod != nil {
				mods = append(mods, tc.in.mod)
			}
			if tc.in.idp {
				idp, _ := h.startIdentityProvider()
				mods = append(mods, h.externalAuth(idp, secretRef("idp-ca", "ca.crt")))
			}
			h.create(h.controlPlane(mods...))
			g.Eventually(func(g Gomega) {
				h.assignAddresses()
				g.Expect(trueConditionOf(h.get()).Reason).To(Equal(tc.reason))
				g.Expect(h.storedEvents()).To(ContainElement(HavePrefix("Warning " + tc.reason)))
			}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

			// The components the wrong input does not block finish first (the addresses the
			// test assigns are events that start passes): wait until no pass is in flight and a
			// second goes by without a pass or a write. A quiet second alone is not enough: on
			// a loaded machine one pass can spend a second between two of its writes. Then the
			// passes and writes over the window are counted.
			type activity struct{ started, ended, writes int64 }
			last := activity{started: -1}
			g.Eventually(func() bool {
				h.assignAddresses()
				now := activity{h.passes.Load(), h.passEnds.Load(), h.writes.Load()}
				settled := now == last && now.started == now.ended
				last = now
				return settled
			}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(BeTrue())
			passes0, writes0 := h.passes.Load(), h.writes.Load()
			g.Consistently(func(g Gomega) {
				g.Expect(trueConditionOf(h.get()).Reason).To(Equal(tc.reason))
			}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
			passes, writes := h.passes.Load()-passes0, h.writes.Load()-writes0
			t.Logf("%s: %d passes, %d writes in 3s", tc.reason, passes, writes)
			g.Expect(passes).To(BeNumerically("<=", 1), "no hot loop")
			g.Expect(writes).To(BeZero(), "nothing written while the input is wrong")
			if tc.credentials {
				for _, name := range []string{"controller-db-credentials", "controller-auth-credentials", "controller-vault-credentials"} {
					g.Expect(h.exists(&corev1.Secret{}, name)).To(BeFalse(), "no credential Secret %s written half-resolved", name)
				}
				g.Expect(h.exists(&appsv1.Deployment{}, "controller")).To(BeFalse())
			}
			for _, e := range h.storedEvents() {
				g.Expect(e).NotTo(ContainSubstring(fake.DefaultPassword))
			}

			// The fix is an event: the ControlPlane becomes ready.
			tc.in.fix(h)
			g.Eventually(func(g Gomega) {
				h.assignAddresses()
				g.Expect(trueConditionOf(h.get()).Type).To(Equal(datasancev3.ConditionReady))
			}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		})
	}
}

// userSecret reads a Secret the test created.
func (h *harness) userSecret(name string) *corev1.Secret {
	h.t.Helper()
	s := &corev1.Secret{}
	h.g.Expect(h.exists(s, name)).To(BeTrue(), "Secret %s", name)
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	return s
}

// storedEvents lists the Events of the test namespace as "type reason note": what the manager's
// recorder wrote to the API server.
func (h *harness) storedEvents() []string {
	h.t.Helper()
	list := &eventsv1.EventList{}
	h.g.Expect(env.Client.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
	out := make([]string, 0, len(list.Items))
	for _, e := range list.Items {
		out = append(out, e.Type+" "+e.Reason+" "+e.Note)
	}
	return out
}
