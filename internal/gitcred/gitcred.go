// Package gitcred names the keys of a Git credentials Secret. It is the one table of them: the
// Git writer (internal/gitops) reads the push credentials by these keys, and the renderer
// (internal/render) copies the read-only credentials under the same keys into the tenant vCluster
// for Flux.
//
// The keys are those of Flux's GitRepository Secret format
// (https://fluxcd.io/flux/components/source/gitrepositories/#secret-reference), so one Secret
// serves both the operator and Flux. Token is the only key of the operator's own: Flux has no
// such key, and the renderer turns a token into Username and Password for it.
//
// The package imports nothing, so the renderer, which does no I/O, can use it without linking the
// Git client.
package gitcred

// Keys of a Git credentials Secret.
const (
	// Username and Password select HTTP basic auth. For SSH, Password is the passphrase of an
	// encrypted Identity.
	Username = "username"
	Password = "password"
	// Token selects HTTP basic auth with the token as password and Username as user, or
	// DefaultTokenUser when Username is absent. This is what GitHub, GitLab and Gitea accept for
	// personal, project and deploy tokens.
	Token = "token"
	// BearerToken selects an "Authorization: Bearer" header, for servers that accept OAuth bearer
	// tokens on Git smart HTTP.
	BearerToken = "bearerToken"
	// CA is an optional PEM CA bundle for HTTPS, added to the system roots.
	CA = "ca.crt"
	// Identity is the PEM private key for SSH.
	Identity = "identity"
	// KnownHosts holds the SSH host keys; it is required, host keys are always verified.
	KnownHosts = "known_hosts"
)

// DefaultTokenUser is the basic-auth user sent with a Token when the Secret holds no Username.
const DefaultTokenUser = "git"

// HTTPKeys returns the keys a credentials Secret may hold for an http(s) repository. Each call
// returns a new slice.
func HTTPKeys() []string {
	return []string{Username, Password, Token, BearerToken, CA}
}

// SSHKeys returns the keys a credentials Secret may hold for an ssh repository. Each call returns
// a new slice.
func SSHKeys() []string {
	return []string{Identity, KnownHosts, Password}
}
