package v3

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

func ref(name, key string) *corev1.SecretKeySelector {
	return &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}
}

func fields(refs []CredentialRef) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, r.Field)
	}
	return out
}

// Every reference in use is listed once, in a fixed order; references in a vault block that is
// not used, the bootstrap reference in external mode and a reference without a name are not.
func TestCredentialRefs(t *testing.T) {
	cases := map[string]struct {
		spec ControlPlaneSpec
		want []string
	}{
		"none": {ControlPlaneSpec{Auth: Auth{Mode: AuthModeEmbedded}}, []string{}},
		"embedded, every auth and database reference": {ControlPlaneSpec{
			Auth: Auth{Mode: AuthModeEmbedded, Bootstrap: &Bootstrap{PasswordSecretRef: ref("b", "p")},
				Client: &OIDCClient{SecretRef: ref("c", "s")}, SessionStore: &SessionStore{SecretRef: ref("s", "s")}},
			Database: Database{PasswordSecretRef: ref("db", "password")},
		}, []string{FieldBootstrapPasswordSecretRef, FieldDatabasePasswordSecretRef, FieldClientSecretRef, FieldSessionSecretRef}},
		"external mode skips the bootstrap reference": {ControlPlaneSpec{
			Auth: Auth{Mode: AuthModeExternal, Bootstrap: &Bootstrap{PasswordSecretRef: ref("b", "p")}, Client: &OIDCClient{SecretRef: ref("c", "s")}},
		}, []string{FieldClientSecretRef}},
		"an empty name is not a reference": {ControlPlaneSpec{Database: Database{PasswordSecretRef: ref("", "password")}}, []string{}},
		"hashicorp wins over aws": {ControlPlaneSpec{Vault: &Vault{
			Hashicorp: &VaultHashicorp{TokenSecretRef: ref("v", "token")},
			AWS:       &VaultAWS{AccessKeySecretRef: ref("aws", "key")},
		}}, []string{FieldVaultTokenSecretRef}},
		"aws both keys": {ControlPlaneSpec{Vault: &Vault{AWS: &VaultAWS{AccessKeyIDSecretRef: ref("aws", "id"), AccessKeySecretRef: ref("aws", "key")}}},
			[]string{FieldVaultAccessKeyIDSecretRef, FieldVaultAccessKeySecretRef}},
		"azure":  {ControlPlaneSpec{Vault: &Vault{Azure: &VaultAzure{ClientSecretRef: ref("az", "s")}}}, []string{FieldVaultClientSecretRef}},
		"google": {ControlPlaneSpec{Vault: &Vault{Google: &VaultGoogle{CredentialsSecretRef: ref("g", "json")}}}, []string{FieldVaultCredentialsSecretRef}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(fields(tc.spec.CredentialRefs())).To(Equal(tc.want))
		})
	}
}

// WithCredentials writes each value into its inline field of a copy and leaves the spec alone;
// a reference without a value keeps the inline field (an optional reference's fallback).
func TestWithCredentials(t *testing.T) {
	g := NewWithT(t)
	spec := &ControlPlaneSpec{
		Auth: Auth{Mode: AuthModeEmbedded, Bootstrap: &Bootstrap{Password: "inline", PasswordSecretRef: ref("b", "p")},
			Client: &OIDCClient{SecretRef: ref("c", "s")}, SessionStore: &SessionStore{SecretRef: ref("s", "s")}},
		Database: Database{PasswordSecretRef: ref("db", "password")},
		Vault:    &Vault{AWS: &VaultAWS{AccessKeyIDSecretRef: ref("aws", "id"), AccessKeySecretRef: ref("aws", "key")}},
	}
	before := spec.DeepCopy()
	got := spec.WithCredentials(map[string]string{
		FieldDatabasePasswordSecretRef: "db-pw", FieldClientSecretRef: "client", FieldSessionSecretRef: "session",
		FieldVaultAccessKeyIDSecretRef: "AKIA", FieldVaultAccessKeySecretRef: "aws-key",
	})
	g.Expect(spec).To(Equal(before), "the spec is not modified")
	g.Expect(got.Auth.Bootstrap.Password).To(Equal("inline"))
	g.Expect(got.Database.Password).To(Equal("db-pw"))
	g.Expect(got.Auth.Client.Secret).To(Equal("client"))
	g.Expect(got.Auth.SessionStore.Secret).To(Equal("session"))
	g.Expect(got.Vault.AWS.AccessKeyID).To(Equal("AKIA"))
	g.Expect(got.Vault.AWS.AccessKey).To(Equal("aws-key"))
	g.Expect(spec.WithCredentials(map[string]string{FieldBootstrapPasswordSecretRef: "from-secret"}).Auth.Bootstrap.Password).To(Equal("from-secret"))
	g.Expect((&SessionStore{SecretRef: ref("s", "k")}).SessionSecretSet()).To(BeTrue())
	g.Expect((&SessionStore{}).SessionSecretSet()).To(BeFalse())
	g.Expect((*SessionStore)(nil).SessionSecretSet()).To(BeFalse())
}
