package apptest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/fluxcd/gitkit"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/kubeopera/kubeopera-operator/internal/gitcred"
)

// SSHAccess is what a client of the server's SSH endpoint needs.
type SSHAccess struct {
	// BaseURL is ssh://git@127.0.0.1:<port>; append "/<repo>.git".
	BaseURL string
	// Identity is a PEM private key the server accepts (and the only one).
	Identity []byte
	// KnownHosts holds the server's host key.
	KnownHosts []byte
}

// SecretData is the content of an SSH Git credentials Secret.
func (a SSHAccess) SecretData() map[string][]byte {
	return map[string][]byte{gitcred.Identity: a.Identity, gitcred.KnownHosts: a.KnownHosts}
}

// StartSSH serves the same repositories over SSH. Only one client key is accepted, and the
// host key is published in KnownHosts, so both directions are really verified. Later calls
// return the same access.
func (s *GitServer) StartSSH() (SSHAccess, error) {
	s.sshOnce.Do(func() { s.ssh, s.sshErr = s.startSSH() })
	return s.ssh, s.sshErr
}

func (s *GitServer) startSSH() (SSHAccess, error) {
	clientKey, clientPEM, err := newKey()
	if err != nil {
		return SSHAccess{}, err
	}
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(clientKey)))
	s.PublicKeyLookupFunc(func(content string) (*gitkit.PublicKey, error) {
		if content != authorized {
			return nil, errors.New("unknown public key")
		}
		return &gitkit.PublicKey{Id: "test-client"}, nil
	})

	// The host key, written where gitkit looks for it (it would generate one otherwise).
	hostKey, hostPEM, err := newKey()
	if err != nil {
		return SSHAccess{}, err
	}
	keyDir, err := os.MkdirTemp("", "git-server-keys-")
	if err != nil {
		return SSHAccess{}, err
	}
	if err := os.WriteFile(filepath.Join(keyDir, "gitkit.rsa"), hostPEM, 0o600); err != nil {
		return SSHAccess{}, fmt.Errorf("write host key: %w", err)
	}
	s.KeyDir(keyDir)
	if err := s.ListenSSH(); err != nil {
		return SSHAccess{}, fmt.Errorf("listen ssh: %w", err)
	}
	go func() { _ = s.GitServer.StartSSH() }()

	base := s.SSHAddress()
	addr := strings.TrimPrefix(base, "ssh://git@")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return SSHAccess{}, fmt.Errorf("ssh address %q: %w", addr, err)
	}
	return SSHAccess{
		BaseURL:    base,
		Identity:   clientPEM,
		KnownHosts: []byte(knownhosts.Line([]string{addr}, hostKey) + "\n"),
	}, nil
}

// newKey generates an ed25519 key: its public key and its private key in OpenSSH PEM format.
func newKey() (ssh.PublicKey, []byte, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		return nil, nil, fmt.Errorf("encode key: %w", err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, nil, fmt.Errorf("public key: %w", err)
	}
	return sshPub, pem.EncodeToMemory(block), nil
}

// KnownHostsWithOtherKey is a known_hosts for the same address with a key the server does not
// have: connecting with it must fail host key verification.
func (a SSHAccess) KnownHostsWithOtherKey() ([]byte, error) {
	other, _, err := newKey()
	if err != nil {
		return nil, err
	}
	addr := strings.TrimPrefix(a.BaseURL, "ssh://git@")
	return []byte(knownhosts.Line([]string{addr}, other) + "\n"), nil
}
