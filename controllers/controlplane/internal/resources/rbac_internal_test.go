package resources

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// secretRules returns the rules of a Role that mention Secrets.
func secretRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		for _, res := range r.Resources {
			if res == "secrets" || res == "*" {
				out = append(out, r)
			}
		}
	}
	return out
}

// The operand Roles name the Secrets they may read (docs/controlplane.md#operand-rbac): the
// Controller gets the CAs it imports (the NATS ones only with NATS on), the router its own TLS
// Secrets; get only, never list or watch, and no wildcard anywhere.
func TestOperandRolesNameTheirSecrets(t *testing.T) {
	natsOff := testfixture.ControlPlane(testfixture.WithoutNATS())
	cases := map[string]struct {
		rules []rbacv1.PolicyRule
		names []string
	}{
		"controller, NATS on":  {ControllerRules(&testfixture.ControlPlane().Spec), []string{"router-site-ca", "default-router-local-ca", "nats-site-ca", "default-nats-local-ca"}},
		"controller, NATS off": {ControllerRules(&natsOff.Spec), []string{"router-site-ca", "default-router-local-ca"}},
		"router":               {RouterRules, []string{"router-site-ca", "default-router-local-ca", "router-site-server", "router-local-server"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(secretRules(tc.rules)).To(Equal([]rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: tc.names, Verbs: []string{"get"},
			}}))
			for _, r := range tc.rules {
				g.Expect(r.Verbs).NotTo(ContainElement("*"))
				g.Expect(r.Resources).NotTo(ContainElement("*"))
			}
			// The rendered Role carries the names.
			role := Role(MetaFor(testfixture.ControlPlane(), ComponentController, ControllerName), tc.rules...)
			var rendered [][]string
			for _, r := range role.Rules {
				if len(r.Resources) == 1 && r.Resources[0] == "secrets" {
					rendered = append(rendered, r.ResourceNames)
				}
			}
			g.Expect(rendered).To(Equal([][]string{tc.names}))
		})
	}
}

// A session secret by reference gets AUTH_SESSION_SECRET from controller-auth-credentials, like
// an inline one; the pod template never carries a credential value.
func TestControllerEnvCredentialReferences(t *testing.T) {
	g := NewWithT(t)
	ref := func(name, key string) *corev1.SecretKeySelector {
		return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
	}
	cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth.SessionStore = &datasancev3.SessionStore{SecretRef: ref("session", "key")}
		cp.Spec.Database.PasswordSecretRef = ref("db", "password")
		cp.Spec.Vault = &datasancev3.Vault{Hashicorp: &datasancev3.VaultHashicorp{Address: "https://vault", TokenSecretRef: ref("vault", "token")}}
	})
	resolved := cp.Spec.WithCredentials(map[string]string{
		datasancev3.FieldSessionSecretRef: "session-value", datasancev3.FieldDatabasePasswordSecretRef: "db-value",
		datasancev3.FieldVaultTokenSecretRef: "vault-value",
	})
	creds := ControllerCredentials(resolved, "pw")
	g.Expect(creds[AuthSecretName]).To(HaveKeyWithValue("auth-session-secret", []byte("session-value")))
	g.Expect(creds[DbSecretName]).To(HaveKeyWithValue("password", []byte("db-value")))
	g.Expect(creds[VaultSecretName]).To(HaveKeyWithValue("token", []byte("vault-value")))

	env := envList(controllerEnv(cp, testImages, ControllerURLs{}))
	g.Expect(env).To(ContainElements(
		"AUTH_SESSION_SECRET<-controller-auth-credentials/auth-session-secret",
		"DB_PASSWORD<-controller-db-credentials/password",
		"VAULT_HASHICORP_TOKEN<-controller-vault-credentials/token",
	))
	for _, e := range env {
		for _, v := range []string{"session-value", "db-value", "vault-value"} {
			g.Expect(e).NotTo(ContainSubstring(v), "the env carries a credential")
		}
	}
}

// The NATS pods use no Kubernetes API (nats_rbac.go): they run as ServiceAccount nats, which no
// builder grants anything, and mount no ServiceAccount token.
func TestNatsPodsMountNoToken(t *testing.T) {
	g := NewWithT(t)
	pod := NatsStatefulSet(testfixture.ControlPlane(), NatsWorkload{Image: testImages.Nats, Storage: DesiredNatsStorage(&testfixture.ControlPlane().Spec)}).Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(HaveValue(Equal(NatsRoleName)))
	g.Expect(pod.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
	g.Expect(NatsServiceAccount(testfixture.ControlPlane()).Name).To(HaveValue(Equal("nats")))
}
