package resources

import (
	"strconv"

	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// Credential Secrets of the Controller (docs/controlplane.md#controller-environment).
const (
	DbSecretName    = "controller-db-credentials" //nolint:gosec // G101: Secret names, not credentials.
	AuthSecretName  = "controller-auth-credentials"
	VaultSecretName = "controller-vault-credentials"
)

// secretEnv maps one key of a credential Secret to the Controller env var reading it.
type secretEnv struct {
	key, env string
}

// dbSecretEnv are the keys of controller-db-credentials and their env vars, in env order. The
// database CA goes to DB_SSL_CA_B64, the variable the postgres and mysql providers read (with
// DB_USE_SSL=true and a CA they verify the server; DB_SSL_CA feeds no code).
var dbSecretEnv = []secretEnv{
	{"dbname", "DB_NAME"}, {"host", "DB_HOST"}, {"port", "DB_PORT"}, {"username", "DB_USERNAME"},
	{"password", "DB_PASSWORD"}, {"ssl", "DB_USE_SSL"}, {"ca", "DB_SSL_CA_B64"},
}

// authSecretEnv are the keys of controller-auth-credentials and their env vars, in env order.
// auth-session-secret is read only when spec.auth.sessionStore.secret is set.
var authSecretEnv = []secretEnv{
	{"auth-mode", "AUTH_MODE"},
	{"auth-bootstrap-username", "OIDC_BOOTSTRAP_ADMIN_USERNAME"},
	{"auth-bootstrap-password", "OIDC_BOOTSTRAP_ADMIN_PASSWORD"},
	{"auth-issuer-url", "OIDC_ISSUER_URL"},
	{"auth-client-id", "OIDC_CLIENT_ID"},
	{"auth-client-secret", "OIDC_CLIENT_SECRET"},
}

const authSessionSecretKey = "auth-session-secret" //nolint:gosec // A Secret key name.

// dbSecretData is the data of controller-db-credentials (docs/controlplane.md#database). Every key is present, empty
// when unset, so the env references always resolve; ca is copied verbatim.
func dbSecretData(db *datasancev3.Database) map[string][]byte {
	port := ""
	if db.Port != 0 {
		port = strconv.Itoa(int(db.Port))
	}
	return map[string][]byte{
		"dbname":   []byte(db.DatabaseName),
		"host":     []byte(db.Host),
		"port":     []byte(port),
		"username": []byte(db.User),
		"password": []byte(db.Password),
		"ssl":      []byte(strconv.FormatBool(ptr.Deref(db.SSL, false))),
		"ca":       []byte(ptr.Deref(db.CA, "")),
	}
}

// authSecretData is the data of controller-auth-credentials (docs/controlplane.md#controller-environment); password is the resolved
// bootstrap password (empty in external mode).
func authSecretData(auth *datasancev3.Auth, password string) map[string][]byte {
	var username, clientID, clientSecret, sessionSecret string
	if auth.Bootstrap != nil {
		username = auth.Bootstrap.Username
	}
	if auth.Client != nil {
		clientID, clientSecret = auth.Client.ID, auth.Client.Secret
	}
	if auth.SessionStore != nil {
		sessionSecret = auth.SessionStore.Secret
	}
	return map[string][]byte{
		"auth-mode":               []byte(auth.Mode),
		"auth-bootstrap-username": []byte(username),
		"auth-bootstrap-password": []byte(password),
		"auth-issuer-url":         []byte(auth.IssuerURL),
		"auth-client-id":          []byte(clientID),
		"auth-client-secret":      []byte(clientSecret),
		authSessionSecretKey:      []byte(sessionSecret),
	}
}

// vaultActive reports whether the vault integration is configured (docs/controlplane.md#vault): the block is set
// and names a provider or holds a provider block.
func vaultActive(v *datasancev3.Vault) bool {
	return v != nil && (v.Provider != "" || v.Hashicorp != nil || v.AWS != nil || v.Azure != nil || v.Google != nil)
}

// vaultProviderEnv are the keys of controller-vault-credentials of the first provider block in
// the order hashicorp, aws, azure, google (docs/controlplane.md#vault), with their env vars and values.
func vaultProviderEnv(v *datasancev3.Vault) (provider string, keys []secretEnv, values map[string]string) {
	switch {
	case v == nil:
		return "", nil, nil
	case v.Hashicorp != nil:
		return "hashicorp", []secretEnv{
				{"address", "VAULT_HASHICORP_ADDRESS"}, {"token", "VAULT_HASHICORP_TOKEN"}, {"mount", "VAULT_HASHICORP_MOUNT"},
			}, map[string]string{
				"address": v.Hashicorp.Address, "token": v.Hashicorp.Token, "mount": v.Hashicorp.Mount,
			}
	case v.AWS != nil:
		return "aws", []secretEnv{
				{"region", "VAULT_AWS_REGION"}, {"accessKeyId", "VAULT_AWS_ACCESS_KEY_ID"}, {"accessKey", "VAULT_AWS_ACCESS_KEY"},
			}, map[string]string{
				"region": v.AWS.Region, "accessKeyId": v.AWS.AccessKeyID, "accessKey": v.AWS.AccessKey,
			}
	case v.Azure != nil:
		return "azure", []secretEnv{
				{"url", "VAULT_AZURE_URL"}, {"tenantId", "VAULT_AZURE_TENANT_ID"},
				{"clientId", "VAULT_AZURE_CLIENT_ID"}, {"clientSecret", "VAULT_AZURE_CLIENT_SECRET"},
			}, map[string]string{
				"url": v.Azure.URL, "tenantId": v.Azure.TenantID, "clientId": v.Azure.ClientID, "clientSecret": v.Azure.ClientSecret,
			}
	case v.Google != nil:
		return "google", []secretEnv{
				{"projectId", "VAULT_GOOGLE_PROJECT_ID"}, {"credentials", "VAULT_GOOGLE_CREDENTIALS"},
			}, map[string]string{
				"projectId": v.Google.ProjectID, "credentials": v.Google.Credentials,
			}
	default:
		return "", nil, nil
	}
}

// vaultSecretData is the data of controller-vault-credentials: the provider block's fields.
func vaultSecretData(v *datasancev3.Vault) map[string][]byte {
	_, _, values := vaultProviderEnv(v)
	data := make(map[string][]byte, len(values))
	for k, val := range values {
		data[k] = []byte(val)
	}
	return data
}

// ControllerCredentials is the data of the Controller's credential Secrets by name; the vault
// Secret is there only when the vault is active.
func ControllerCredentials(spec *datasancev3.ControlPlaneSpec, password string) map[string]map[string][]byte {
	creds := map[string]map[string][]byte{
		DbSecretName:   dbSecretData(&spec.Database),
		AuthSecretName: authSecretData(&spec.Auth, password),
	}
	if vaultActive(spec.Vault) {
		creds[VaultSecretName] = vaultSecretData(spec.Vault)
	}
	return creds
}

// RolloutKeySecretName holds the per-ControlPlane key of the credentials hash.
const RolloutKeySecretName = "controller-rollout-key"

// RolloutKeyBytes is the size of that key.
const RolloutKeyBytes = 32
