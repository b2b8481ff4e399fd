package controlplane_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// Every credential reference works (docs/controlplane.md#credentials): the value in the
// referenced Secret reaches the Controller's credential Secret under the key its env entry
// reads, the external-mode login uses the referenced client secret (the fake accepts only the
// right one), and no value appears in the pod template, the ControlPlane (spec, status) or an
// Event.
func TestCredentialReferences(t *testing.T) {
	t.Parallel()
	type want struct{ secret, key, value string }
	cases := []struct {
		name    string
		secrets map[string]map[string]string
		mod     func(*datasancev3.ControlPlane, *harness)
		want    []want
	}{
		{
			name: "embedded: bootstrap, database, session, hashicorp token",
			secrets: map[string]map[string]string{
				"pot-credentials": {"bootstrap": fake.DefaultPassword, "db": "db-pw-3f9a1c", "session": "cookie-key-77de01"},
				"vault":           {"token": "hvs.tok-51bb0e"},
			},
			mod: func(cp *datasancev3.ControlPlane, _ *harness) {
				cp.Spec.Auth.Bootstrap.Password, cp.Spec.Auth.Bootstrap.PasswordSecretRef = "", secretRef("pot-credentials", "bootstrap")
				cp.Spec.Database.Password, cp.Spec.Database.PasswordSecretRef = "", secretRef("pot-credentials", "db")
				cp.Spec.Auth.SessionStore = &datasancev3.SessionStore{Type: "database", SecretRef: secretRef("pot-credentials", "session")}
				cp.Spec.Vault = &datasancev3.Vault{Hashicorp: &datasancev3.VaultHashicorp{Address: "https://vault.example.com", TokenSecretRef: secretRef("vault", "token")}}
			},
			want: []want{
				{"controller-auth-credentials", "auth-bootstrap-password", fake.DefaultPassword},
				{"controller-db-credentials", "password", "db-pw-3f9a1c"},
				{"controller-auth-credentials", "auth-session-secret", "cookie-key-77de01"},
				{"controller-vault-credentials", "token", "hvs.tok-51bb0e"},
			},
		},
		{
			name:    "external: client secret, aws key id and key",
			secrets: map[string]map[string]string{"oidc": {"secret": fake.DefaultClientSecret}, "aws": {"id": "AKIA-0c4e2d", "key": "aws-key-9e0f3a"}},
			mod: func(cp *datasancev3.ControlPlane, h *harness) {
				cp.Spec.Auth = datasancev3.Auth{Mode: datasancev3.AuthModeExternal, IssuerURL: h.api.IssuerURL(),
					Client: &datasancev3.OIDCClient{ID: fake.DefaultClientID, SecretRef: secretRef("oidc", "secret")}}
				cp.Spec.Vault = &datasancev3.Vault{AWS: &datasancev3.VaultAWS{Region: "eu-west-1",
					AccessKeyIDSecretRef: secretRef("aws", "id"), AccessKeySecretRef: secretRef("aws", "key")}}
			},
			want: []want{
				{"controller-auth-credentials", "auth-client-secret", fake.DefaultClientSecret},
				{"controller-vault-credentials", "accessKeyId", "AKIA-0c4e2d"},
				{"controller-vault-credentials", "accessKey", "aws-key-9e0f3a"},
			},
		},
		{
			name:    "azure client secret",
			secrets: map[string]map[string]string{"azure": {"secret": "azure-secret-4410aa"}},
			mod: func(cp *datasancev3.ControlPlane, _ *harness) {
				cp.Spec.Vault = &datasancev3.Vault{Azure: &datasancev3.VaultAzure{URL: "https://kv.vault.azure.net", ClientSecretRef: secretRef("azure", "secret")}}
			},
			want: []want{{"controller-vault-credentials", "clientSecret", "azure-secret-4410aa"}},
		},
		{
			name:    "google service account key",
			secrets: map[string]map[string]string{"google": {"key.json": `{"private_key":"gsa-83c1f2"}`}},
			mod: func(cp *datasancev3.ControlPlane, _ *harness) {
				cp.Spec.Vault = &datasancev3.Vault{Google: &datasancev3.VaultGoogle{ProjectID: "p", CredentialsSecretRef: secretRef("google", "key.json")}}
			},
			want: []want{{"controller-vault-credentials", "credentials", `{"private_key":"gsa-83c1f2"}`}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			g := h.g
			for name, data := range tc.secrets {
				h.createSecret(name, data)
			}
			h.bringUp(h.controlPlane(func(cp *datasancev3.ControlPlane) { tc.mod(cp, h) }))
			var values []string
			for _, w := range tc.want {
				g.Expect(h.secret(w.secret).Data).To(HaveKeyWithValue(w.key, []byte(w.value)), "%s/%s", w.secret, w.key)
				values = append(values, w.value)
			}
			if strings.HasPrefix(tc.name, "external") {
				g.Expect(h.api.RequestsTo("POST", "/oidc/token")).NotTo(BeEmpty(), "logged in with the referenced client secret")
			}
			h.expectNoCredentialOutside(values)
		})
	}
}

// A changed referenced Secret rolls the Controller: with the reconciler in a manager, the
// Secret watch starts a pass, the credential Secret takes the new value and the pod template's
// keyed hash changes. Neither value is written anywhere else.
func TestCredentialReferenceChangeRollsTheController(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.startManager()
	db := h.createSecret("database", map[string]string{"password": "before-6a2f"})
	h.create(h.controlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Database.Password, cp.Spec.Database.PasswordSecretRef = "", secretRef("database", "password")
	}))
	g.Eventually(func(g Gomega) {
		h.assignAddresses()
		g.Expect(trueConditionOf(h.get()).Type).To(Equal(datasancev3.ConditionReady))
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	hash := h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]
	g.Expect(hash).NotTo(BeEmpty())

	db.StringData = map[string]string{"password": "after-c01d"}
	g.Expect(env.Client.Update(h.ctx, db)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(h.secret("controller-db-credentials").Data).To(HaveKeyWithValue("password", []byte("after-c01d")))
		g.Expect(h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationCredentialsHash]).NotTo(Equal(hash))
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	h.eventuallyReadyAfterRollouts()
	h.expectNoCredentialOutside([]string{"before-6a2f", "after-c01d"})
}

// credentialEnv matches the names of the Controller variables that carry a credential.
var credentialEnv = regexp.MustCompile(`PASSWORD|SECRET|_TOKEN$|ACCESS_KEY|CREDENTIALS$`)

// expectNoCredentialOutside greps the Controller Deployment's pod template, the ControlPlane
// (spec and status), the recorded Events and the namespace's Event objects for each value.
func (h *harness) expectNoCredentialOutside(values []string) {
	h.t.Helper()
	tpl, err := json.Marshal(h.deployment("controller").Spec.Template)
	h.g.Expect(err).NotTo(HaveOccurred())
	cp, err := json.Marshal(h.get())
	h.g.Expect(err).NotTo(HaveOccurred())
	events := &eventsv1.EventList{}
	h.g.Expect(env.Client.List(h.ctx, events, client.InNamespace(h.ns))).To(Succeed())
	stored, err := json.Marshal(events)
	h.g.Expect(err).NotTo(HaveOccurred())
	recorded := strings.Join(h.rec.list(), "\n")
	for _, v := range values {
		h.g.Expect(string(tpl)).NotTo(ContainSubstring(v), "a credential in the pod template")
		h.g.Expect(string(cp)).NotTo(ContainSubstring(v), "a credential in the ControlPlane")
		h.g.Expect(string(stored)).NotTo(ContainSubstring(v), "a credential in an Event")
		h.g.Expect(recorded).NotTo(ContainSubstring(v), "a credential in a recorded Event")
	}
	h.g.Expect(h.deployment("controller").Spec.Template.Spec.Containers[0].Env).NotTo(BeEmpty())
	for _, e := range h.deployment("controller").Spec.Template.Spec.Containers[0].Env {
		if credentialEnv.MatchString(e.Name) {
			h.g.Expect(e.Value).To(BeEmpty(), "%s is a plain value", e.Name)
			h.g.Expect(e.ValueFrom).NotTo(BeNil(), "%s comes from a Secret", e.Name)
		}
	}
}
