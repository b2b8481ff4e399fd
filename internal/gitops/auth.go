package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"

	"github.com/kubeopera/kubeopera-operator/internal/gitcred"
)

// defaultSSHUser is used when an ssh:// URL names no user.
const defaultSSHUser = "git"

// Auth holds the credentials for one repository. Build it with
// AuthFromSecretData; the zero value is anonymous access. Auth never prints
// its secrets and every error returned by the Writer is scrubbed of them.
type Auth struct {
	method   transport.AuthMethod
	caBundle []byte
	// secrets are replaced by "*****" in error messages, in case a server or
	// library echoes them.
	secrets []string
	// id is a digest of the credentials. Changes are only batched together
	// when they carry the same credentials, because one push carries them all.
	id string
	// ssh: the credentials are for an SSH repository (sshdeadline.go).
	ssh bool
}

// AuthFromSecretData builds the auth for repoURL from the data of a
// Kubernetes Secret (nil or empty data means anonymous, allowed only for
// HTTP(S)).
//
// For http(s) URLs exactly one of these is accepted:
//   - "username" + "password": HTTP basic auth;
//   - "token" (optional "username", default "git"): basic auth with the token
//     as password;
//   - "bearerToken": an Authorization: Bearer header.
//
// plus an optional "ca.crt". For ssh URLs "identity" (PEM private key,
// passphrase in "password") and "known_hosts" are both required; the user is
// the one in the URL, or "git". Errors wrap ErrInvalidAuth and never contain
// secret values.
func AuthFromSecretData(repoURL string, data map[string][]byte) (Auth, error) {
	ep, err := transport.NewEndpoint(repoURL)
	if err != nil || repoURL == "" {
		return Auth{}, fmt.Errorf("%w: repository URL %q cannot be parsed", ErrInvalidAuth, redactURL(repoURL))
	}
	switch ep.Protocol {
	case "http", "https":
		if err := onlyKeys(data, "HTTP(S)", httpKeys); err != nil {
			return Auth{}, err
		}
		return httpAuth(data)
	case "ssh":
		if err := onlyKeys(data, "SSH", sshKeys); err != nil {
			return Auth{}, err
		}
		return sshAuth(ep, data)
	default:
		return Auth{}, fmt.Errorf("%w: scheme %q is not supported (use https, http or ssh)", ErrInvalidAuth, ep.Protocol)
	}
}

// The keys a credentials Secret may hold for each transport (gitcred). Any other key means the
// Secret is not a Git credential of that shape (a ServiceAccount token Secret holds "namespace", a
// TLS Secret "tls.key", an SSH key Secret for an HTTPS URL "identity"): it is refused rather than
// guessed at, so a Secret is never used as something it is not.
var (
	httpKeys = gitcred.HTTPKeys()
	sshKeys  = gitcred.SSHKeys()
)

// onlyKeys refuses data holding a key outside allowed. The message names the key, never a value.
func onlyKeys(data map[string][]byte, transportName string, allowed []string) error {
	var extra []string
	for k := range data {
		if !slices.Contains(allowed, k) {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	return fmt.Errorf("%w: %w: key %q is not a Git credential key for an %s repository (allowed: %s)",
		ErrInvalidAuth, ErrNotGitCredential, extra[0], transportName, strings.Join(allowed, ", "))
}

func httpAuth(data map[string][]byte) (Auth, error) {
	user := string(data[gitcred.Username])
	pass := string(data[gitcred.Password])
	token := string(data[gitcred.Token])
	bearer := string(data[gitcred.BearerToken])
	a := Auth{caBundle: data[gitcred.CA]}

	switch {
	case bearer != "" && (user != "" || pass != "" || token != ""):
		return Auth{}, fmt.Errorf("%w: set either %q or %q/%q/%q, not both",
			ErrInvalidAuth, gitcred.BearerToken, gitcred.Username, gitcred.Password, gitcred.Token)
	case token != "" && pass != "":
		return Auth{}, fmt.Errorf("%w: set either %q or %q, not both", ErrInvalidAuth, gitcred.Token, gitcred.Password)
	case bearer != "":
		a.method = &githttp.TokenAuth{Token: bearer}
		a.secrets = []string{bearer}
	case token != "":
		if user == "" {
			user = gitcred.DefaultTokenUser
		}
		a.method = &githttp.BasicAuth{Username: user, Password: token}
		a.secrets = []string{token}
	case user != "" && pass != "":
		a.method = &githttp.BasicAuth{Username: user, Password: pass}
		a.secrets = []string{pass}
	case user != "" || pass != "":
		return Auth{}, fmt.Errorf("%w: %q and %q must be set together", ErrInvalidAuth, gitcred.Username, gitcred.Password)
	case len(data) > 0 && len(a.caBundle) == 0:
		// Keys present but all empty: fail closed rather than go anonymous.
		return Auth{}, fmt.Errorf("%w: %w: the Secret holds no credential value", ErrInvalidAuth, ErrNotGitCredential)
	}
	a.id = digest("http", user, pass, token, bearer, string(a.caBundle))
	return a, nil
}

func sshAuth(ep *transport.Endpoint, data map[string][]byte) (Auth, error) {
	identity := data[gitcred.Identity]
	knownHosts := data[gitcred.KnownHosts]
	if len(knownHosts) == 0 {
		return Auth{}, fmt.Errorf("%w: ssh repository needs %q in the Secret: host keys are always verified",
			ErrInvalidAuth, gitcred.KnownHosts)
	}
	if len(identity) == 0 {
		return Auth{}, fmt.Errorf("%w: ssh repository needs a private key in %q", ErrInvalidAuth, gitcred.Identity)
	}
	user := ep.User
	if user == "" {
		user = defaultSSHUser
	}
	passphrase := string(data[gitcred.Password])
	keys, err := gitssh.NewPublicKeys(user, identity, passphrase)
	if err != nil {
		// x/crypto parse errors describe the format, never the key bytes.
		return Auth{}, fmt.Errorf("%w: parse %q: %w", ErrInvalidAuth, gitcred.Identity, err)
	}
	db, err := knownHostsDB(knownHosts)
	if err != nil {
		return Auth{}, err
	}
	port := ep.Port
	if port == 0 {
		port = 22
	}
	hostPort := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	algos := db.HostKeyAlgorithms(hostPort)
	if len(algos) == 0 {
		return Auth{}, fmt.Errorf("%w: %q has no key for host %s", ErrInvalidAuth, gitcred.KnownHosts, hostPort)
	}
	keys.HostKeyCallback = db.HostKeyCallback()
	// Offer only the algorithms known_hosts has keys for, otherwise the server
	// may present another key type and verification fails spuriously.
	keys.HostKeyAlgorithms = algos

	secrets := []string{string(identity)}
	if passphrase != "" {
		secrets = append(secrets, passphrase)
	}
	return Auth{
		method:  sshKeysWithTimeout{keys},
		secrets: secrets,
		id:      digest("ssh", user, string(identity), passphrase, string(knownHosts)),
		ssh:     true,
	}, nil
}

// knownHostsDB parses known_hosts content. The parsers only read files, so
// the content goes through a private temporary file that is removed at once.
func knownHostsDB(content []byte) (*knownhosts.HostKeyDB, error) {
	f, err := os.CreateTemp("", "kubeopera-known-hosts-*")
	if err != nil {
		return nil, fmt.Errorf("write known_hosts: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, werr := f.Write(content)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		return nil, fmt.Errorf("write known_hosts: %w", firstErr(werr, cerr))
	}
	db, err := knownhosts.NewDB(f.Name())
	if err != nil {
		return nil, fmt.Errorf("%w: parse %q: %w", ErrInvalidAuth, gitcred.KnownHosts, err)
	}
	return db, nil
}

// digest returns a short, non-reversible identifier of the parts.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		// Length prefix keeps ("ab","c") and ("a","bc") apart.
		_, _ = fmt.Fprintf(h, "%d:%s;", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// redact returns err with every secret of a replaced in its message, keeping
// the chain for errors.Is/As.
func (a Auth) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	redacted := msg
	for _, s := range a.secrets {
		if s != "" {
			redacted = strings.ReplaceAll(redacted, s, "*****")
		}
	}
	if redacted == msg {
		return err
	}
	return &redactedError{msg: redacted, err: err}
}

// redactedError carries a scrubbed message over the original error chain.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sshDialTimeout bounds the TCP connect of SSH transports: go-git dials SSH
// without the operation's context, so a black-holed host would otherwise
// hold the repository's queue for the kernel's connect timeout.
const sshDialTimeout = 30 * time.Second

// sshKeysWithTimeout is go-git's public-key auth with a dial timeout.
type sshKeysWithTimeout struct {
	*gitssh.PublicKeys
}

// ClientConfig implements gitssh.AuthMethod.
func (k sshKeysWithTimeout) ClientConfig() (*ssh.ClientConfig, error) {
	cfg, err := k.PublicKeys.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = sshDialTimeout
	return cfg, nil
}

// Anonymous reports whether a sends no credentials.
func (a Auth) Anonymous() bool { return a.method == nil }

// SharesSecretWith reports whether a and b hold a secret value in common (a password, token,
// bearer token or private key): the same credential under another Secret's name.
func (a Auth) SharesSecretWith(b Auth) bool {
	for _, s := range a.secrets {
		if s != "" && slices.Contains(b.secrets, s) {
			return true
		}
	}
	return false
}
