package v3

import corev1 "k8s.io/api/core/v1"

// Field paths of the credential references, as users write them and as condition messages name
// them.
const (
	FieldBootstrapPasswordSecretRef = "spec.auth.bootstrap.passwordSecretRef" //nolint:gosec // G101: a field path, not a credential.
	FieldDatabasePasswordSecretRef  = "spec.database.passwordSecretRef"
	FieldClientSecretRef            = "spec.auth.client.secretRef"             //nolint:gosec // G101: a field path, not a credential.
	FieldSessionSecretRef           = "spec.auth.sessionStore.secretRef"       //nolint:gosec // G101: a field path, not a credential.
	FieldVaultTokenSecretRef        = "spec.vault.hashicorp.tokenSecretRef"    //nolint:gosec // G101: a field path, not a credential.
	FieldVaultAccessKeyIDSecretRef  = "spec.vault.aws.accessKeyIdSecretRef"    //nolint:gosec // G101: a field path, not a credential.
	FieldVaultAccessKeySecretRef    = "spec.vault.aws.accessKeySecretRef"      //nolint:gosec // G101: a field path, not a credential.
	FieldVaultClientSecretRef       = "spec.vault.azure.clientSecretRef"       //nolint:gosec // G101: a field path, not a credential.
	FieldVaultCredentialsSecretRef  = "spec.vault.google.credentialsSecretRef" //nolint:gosec // G101: a field path, not a credential.
)

// CredentialRef is one credential of a ControlPlane that is read from a Secret of its namespace.
// It is not an API type (no DeepCopy).
//
// +kubebuilder:object:generate=false
type CredentialRef struct {
	// Field is the path of the reference in the ControlPlane, e.g. spec.database.passwordSecretRef.
	Field string
	// Ref selects the Secret and key.
	Ref *corev1.SecretKeySelector
	// set writes the value read into the credential's inline field of a spec copy.
	set func(*ControlPlaneSpec, string)
}

// CredentialRefs lists the Secret references of the credentials the operator uses, in a fixed
// order: the bootstrap password (embedded mode only), the database password, the OIDC client
// secret, the session secret and the vault credentials of the provider block in use (the first
// of hashicorp, aws, azure, google; a reference in a block that is not used is not read). A
// reference with an empty name is not listed (admission refuses it).
func (s *ControlPlaneSpec) CredentialRefs() []CredentialRef {
	var refs []CredentialRef
	add := func(field string, ref *corev1.SecretKeySelector, set func(*ControlPlaneSpec, string)) {
		if ref != nil && ref.Name != "" {
			refs = append(refs, CredentialRef{Field: field, Ref: ref, set: set})
		}
	}
	if b := s.Auth.Bootstrap; b != nil && s.Auth.Mode == AuthModeEmbedded {
		add(FieldBootstrapPasswordSecretRef, b.PasswordSecretRef, func(c *ControlPlaneSpec, v string) { c.Auth.Bootstrap.Password = v })
	}
	add(FieldDatabasePasswordSecretRef, s.Database.PasswordSecretRef, func(c *ControlPlaneSpec, v string) { c.Database.Password = v })
	if c := s.Auth.Client; c != nil {
		add(FieldClientSecretRef, c.SecretRef, func(c *ControlPlaneSpec, v string) { c.Auth.Client.Secret = v })
	}
	if st := s.Auth.SessionStore; st != nil {
		add(FieldSessionSecretRef, st.SecretRef, func(c *ControlPlaneSpec, v string) { c.Auth.SessionStore.Secret = v })
	}
	switch v := s.Vault; {
	case v == nil:
	case v.Hashicorp != nil:
		add(FieldVaultTokenSecretRef, v.Hashicorp.TokenSecretRef, func(c *ControlPlaneSpec, x string) { c.Vault.Hashicorp.Token = x })
	case v.AWS != nil:
		add(FieldVaultAccessKeyIDSecretRef, v.AWS.AccessKeyIDSecretRef, func(c *ControlPlaneSpec, x string) { c.Vault.AWS.AccessKeyID = x })
		add(FieldVaultAccessKeySecretRef, v.AWS.AccessKeySecretRef, func(c *ControlPlaneSpec, x string) { c.Vault.AWS.AccessKey = x })
	case v.Azure != nil:
		add(FieldVaultClientSecretRef, v.Azure.ClientSecretRef, func(c *ControlPlaneSpec, x string) { c.Vault.Azure.ClientSecret = x })
	case v.Google != nil:
		add(FieldVaultCredentialsSecretRef, v.Google.CredentialsSecretRef, func(c *ControlPlaneSpec, x string) { c.Vault.Google.Credentials = x })
	}
	return refs
}

// WithCredentials returns a copy of the spec in which each credential whose Field has a value
// in values carries that value in its inline field, so that everything rendered from the copy
// reads one field per credential. The copy is for rendering Secret data only: it is never
// written back to the API server.
func (s *ControlPlaneSpec) WithCredentials(values map[string]string) *ControlPlaneSpec {
	out := s.DeepCopy()
	for _, r := range out.CredentialRefs() {
		if v, ok := values[r.Field]; ok {
			r.set(out, v)
		}
	}
	return out
}

// SessionSecretSet reports whether a session secret is configured, inline or by reference.
func (s *SessionStore) SessionSecretSet() bool {
	return s != nil && (s.Secret != "" || (s.SecretRef != nil && s.SecretRef.Name != ""))
}
