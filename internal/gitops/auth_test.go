package gitops

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/fluxcd/gitkit"
	"github.com/fluxcd/pkg/gittestserver"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/kubeopera/kubeopera-operator/internal/gitcred"
)

func TestAuthFromSecretData(t *testing.T) {
	identity, _ := newSSHKey(t)
	_, hostKey := newSSHKey(t)
	knownHosts := knownhosts.Line([]string{"git.example.com"}, hostKey) + "\n"
	const (
		httpsURL = "https://git.example.com/org/apps.git"
		sshURL   = "ssh://git@git.example.com/org/apps.git"
	)
	type data = map[string][]byte

	tests := []struct {
		name    string
		url     string
		data    data
		wantErr string // substring; the error must also wrap ErrInvalidAuth
		check   func(g Gomega, a Auth)
	}{
		{name: "https anonymous", url: httpsURL, data: nil, check: func(g Gomega, a Auth) {
			g.Expect(a.method).To(BeNil())
		}},
		{name: "https basic", url: httpsURL, data: data{"username": []byte("bob"), "password": []byte("s3cret-pw")},
			check: func(g Gomega, a Auth) {
				g.Expect(a.method).To(Equal(&githttp.BasicAuth{Username: "bob", Password: "s3cret-pw"}))
				g.Expect(a.secrets).To(ConsistOf("s3cret-pw"))
			}},
		{name: "https token as basic with user git", url: httpsURL, data: data{"token": []byte("tok-123456")},
			check: func(g Gomega, a Auth) {
				g.Expect(a.method).To(Equal(&githttp.BasicAuth{Username: "git", Password: "tok-123456"}))
			}},
		{name: "https token with username", url: httpsURL, data: data{"username": []byte("oauth2"), "token": []byte("tok-123456")},
			check: func(g Gomega, a Auth) {
				g.Expect(a.method).To(Equal(&githttp.BasicAuth{Username: "oauth2", Password: "tok-123456"}))
			}},
		{name: "https bearer", url: httpsURL, data: data{"bearerToken": []byte("bearer-123456")},
			check: func(g Gomega, a Auth) {
				g.Expect(a.method).To(Equal(&githttp.TokenAuth{Token: "bearer-123456"}))
			}},
		{name: "https CA only", url: httpsURL, data: data{"ca.crt": []byte("PEM")},
			check: func(g Gomega, a Auth) {
				g.Expect(a.method).To(BeNil())
				g.Expect(a.caBundle).To(Equal([]byte("PEM")))
			}},
		{name: "https password without user", url: httpsURL, data: data{"password": []byte("s3cret-pw")}, wantErr: "must be set together"},
		{name: "https bearer and basic", url: httpsURL, data: data{"bearerToken": []byte("bearer-123456"), "username": []byte("bob"), "password": []byte("s3cret-pw")}, wantErr: "not both"},
		{name: "https token and password", url: httpsURL, data: data{"token": []byte("tok-123456"), "password": []byte("s3cret-pw")}, wantErr: "not both"},
		{name: "https with ssh key", url: httpsURL, data: data{"identity": identity}, wantErr: `key "identity" is not a Git credential key for an HTTP(S) repository`},
		// Only Git credential shapes are accepted: a ServiceAccount token Secret's data (token,
		// ca.crt, namespace) must not become basic auth "git:<token>".
		{name: "service account token shape", url: httpsURL, data: data{"token": []byte("eyJhbGciOiJSUzI1NiJ9.sa"), "ca.crt": []byte("PEM"), "namespace": []byte("default")}, wantErr: `key "namespace"`},
		{name: "tls secret shape", url: httpsURL, data: data{"tls.crt": []byte("PEM-cert"), "tls.key": []byte("PEM-key-123")}, wantErr: `key "tls.crt"`},
		{name: "docker config shape", url: httpsURL, data: data{".dockerconfigjson": []byte(`{"auths":{}}`)}, wantErr: `key ".dockerconfigjson"`},
		{name: "https keys all empty", url: httpsURL, data: data{"username": nil, "password": nil}, wantErr: "no credential value"},
		{name: "ssh with basic auth keys", url: sshURL, data: data{"identity": identity, "known_hosts": []byte(knownHosts), "username": []byte("bob")}, wantErr: `key "username" is not a Git credential key for an SSH repository`},
		{name: "ssh with token", url: sshURL, data: data{"identity": identity, "known_hosts": []byte(knownHosts), "token": []byte("tok-123456")}, wantErr: `key "token"`},
		{name: "ssh without known_hosts", url: sshURL, data: data{"identity": identity}, wantErr: "known_hosts"},
		{name: "ssh without secret", url: sshURL, data: nil, wantErr: "known_hosts"},
		{name: "ssh without identity", url: sshURL, data: data{"known_hosts": []byte(knownHosts)}, wantErr: "identity"},
		{name: "ssh bad identity", url: sshURL, data: data{"identity": []byte("not a key"), "known_hosts": []byte(knownHosts)}, wantErr: "identity"},
		{name: "ssh host not in known_hosts", url: "ssh://git@other.example.com/x.git", data: data{"identity": identity, "known_hosts": []byte(knownHosts)}, wantErr: "no key for host other.example.com:22"},
		{name: "ssh bad known_hosts", url: sshURL, data: data{"identity": identity, "known_hosts": []byte("git.example.com ssh-ed25519 !!!\n")}, wantErr: "known_hosts"},
		{name: "unsupported scheme", url: "ftp://git.example.com/x.git", data: nil, wantErr: "not supported"},
		{name: "ssh valid", url: sshURL, data: data{"identity": identity, "known_hosts": []byte(knownHosts)},
			check: func(g Gomega, a Auth) {
				withTimeout, ok := a.method.(sshKeysWithTimeout)
				g.Expect(ok).To(BeTrue())
				keys := withTimeout.PublicKeys
				cfg, err := withTimeout.ClientConfig()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cfg.Timeout).To(Equal(sshDialTimeout))
				g.Expect(keys.User).To(Equal("git"))
				g.Expect(keys.HostKeyCallback).NotTo(BeNil(), "host keys are verified")
				g.Expect(keys.HostKeyAlgorithms).To(Equal([]string{ssh.KeyAlgoED25519}))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a, err := AuthFromSecretData(tt.url, tt.data)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ErrInvalidAuth))
				g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
				for _, v := range tt.data {
					if len(v) > 4 {
						g.Expect(err.Error()).NotTo(ContainSubstring(string(v)), "no secret in the error")
					}
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, a)
		})
	}

	t.Run("different credentials never share a batch", func(t *testing.T) {
		g := NewWithT(t)
		a, _ := AuthFromSecretData(httpsURL, data{"username": []byte("bob"), "password": []byte("one")})
		b, _ := AuthFromSecretData(httpsURL, data{"username": []byte("bob"), "password": []byte("two")})
		a2, _ := AuthFromSecretData(httpsURL, data{"username": []byte("bob"), "password": []byte("one")})
		g.Expect(a.id).NotTo(Equal(b.id))
		g.Expect(a.id).To(Equal(a2.id))
		g.Expect(a.id).NotTo(ContainSubstring("one"))
	})
}

func TestRedactKeepsChain(t *testing.T) {
	g := NewWithT(t)
	a := Auth{secrets: []string{"pa55word"}}
	err := a.redact(errors.Join(ErrAuthFailed, errors.New("server said pa55word is wrong")))
	g.Expect(err).To(MatchError(ErrAuthFailed))
	g.Expect(err.Error()).To(Equal("git authentication failed\nserver said ***** is wrong"))
}

func TestApplyHTTPAuth(t *testing.T) {
	const user, password = "writer", "correct-horse-battery"
	srv := newServer(t, func(s *gittestserver.GitServer) { s.Auth(user, password) })
	repo := testRepo(srv)
	w := newTestWriter(t)
	change := appChange("web", map[string]string{"a.yaml": "1"})

	t.Run("wrong password", func(t *testing.T) {
		g := NewWithT(t)
		auth, err := AuthFromSecretData(repo.URL, map[string][]byte{"username": []byte(user), "password": []byte("wrong-password-42")})
		g.Expect(err).NotTo(HaveOccurred())
		r := repo
		r.Auth = auth

		_, err = w.Apply(context.Background(), r, change)

		g.Expect(err).To(MatchError(ErrAuthFailed))
		g.Expect(err.Error()).NotTo(ContainSubstring("wrong-password-42"))
		t.Log(err)
	})
	t.Run("anonymous", func(t *testing.T) {
		g := NewWithT(t)
		_, err := w.Apply(context.Background(), repo, change)
		g.Expect(err).To(MatchError(ErrAuthFailed))
	})
	t.Run("right password", func(t *testing.T) {
		g := NewWithT(t)
		auth, err := AuthFromSecretData(repo.URL, map[string][]byte{"username": []byte(user), "password": []byte(password)})
		g.Expect(err).NotTo(HaveOccurred())
		r := repo
		r.Auth = auth

		res, err := w.Apply(context.Background(), r, change)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Changed).To(BeTrue())
		files := readRemote(t, repo, &githttp.BasicAuth{Username: user, Password: password}).files(t)
		g.Expect(files).To(HaveKeyWithValue("apps/ns/web/a.yaml", "1"))
	})
	t.Run("cache holds no credentials", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(grepDir(t, w.cacheDir, password)).To(BeEmpty())
	})
}

func TestApplyTokenAuth(t *testing.T) {
	g := NewWithT(t)
	const token = "tok-0123456789"
	srv := newServer(t, func(s *gittestserver.GitServer) { s.Auth(gitcred.DefaultTokenUser, token) })
	repo := testRepo(srv)
	auth, err := AuthFromSecretData(repo.URL, map[string][]byte{"token": []byte(token)})
	g.Expect(err).NotTo(HaveOccurred())
	repo.Auth = auth

	res, err := newTestWriter(t).Apply(context.Background(), repo, appChange("web", map[string]string{"a.yaml": "1"}))

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
}

func TestApplySSH(t *testing.T) {
	srv, err := gittestserver.NewTempGitServer()
	if err != nil {
		t.Fatal(err)
	}
	identity, clientKey := newSSHKey(t)
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(clientKey)))
	// Auth switches on client key checks; the user/password are HTTP only.
	srv.AutoCreate().KeyDir(t.TempDir()).Auth("unused", "unused")
	// The lookup function is a package variable of gittestserver.
	srv.PublicKeyLookupFunc(func(content string) (*gitkit.PublicKey, error) {
		if content != authorized {
			return nil, errors.New("unknown key")
		}
		return &gitkit.PublicKey{Id: "writer"}, nil
	})
	if err := srv.ListenSSH(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.StartSSH() }()
	t.Cleanup(func() {
		_ = srv.StopSSH()
		_ = os.RemoveAll(srv.Root())
		srv.PublicKeyLookupFunc(func(string) (*gitkit.PublicKey, error) { return &gitkit.PublicKey{Id: "test-user"}, nil })
	})
	url := srv.SSHAddress() + "/org/apps.git"
	addr := strings.TrimPrefix(srv.SSHAddress(), "ssh://git@")
	hostKey := serverHostKey(t, addr)
	knownHosts := []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, hostKey))
	_, otherKey := newSSHKey(t)
	w := newTestWriter(t)
	change := appChange("web", map[string]string{"a.yaml": "1"})

	t.Run("verified host key", func(t *testing.T) {
		g := NewWithT(t)
		auth, err := AuthFromSecretData(url, map[string][]byte{"identity": identity, "known_hosts": knownHosts})
		g.Expect(err).NotTo(HaveOccurred())

		res, err := w.Apply(context.Background(), Repo{URL: url, Branch: testBranch, Auth: auth}, change)

		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Changed).To(BeTrue())
	})
	t.Run("client key rejected", func(t *testing.T) {
		g := NewWithT(t)
		unknown, _ := newSSHKey(t)
		auth, err := AuthFromSecretData(url, map[string][]byte{"identity": unknown, "known_hosts": knownHosts})
		g.Expect(err).NotTo(HaveOccurred())

		_, err = w.Apply(context.Background(), Repo{URL: url, Branch: testBranch, Auth: auth},
			appChange("api", map[string]string{"a.yaml": "1"}))

		g.Expect(err).To(MatchError(ErrAuthFailed))
		g.Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
	})
	for name, wrongKey := range map[string]ssh.PublicKey{
		"different host key":       otherRSAKey(t),
		"host key of another type": otherKey,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			auth, err := AuthFromSecretData(url, map[string][]byte{
				"identity":    identity,
				"known_hosts": []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, wrongKey)),
			})
			g.Expect(err).NotTo(HaveOccurred())

			_, err = w.Apply(context.Background(), Repo{URL: url, Branch: testBranch, Auth: auth},
				appChange("api", map[string]string{"a.yaml": "1"}))

			g.Expect(err).To(MatchError(ErrAuthFailed))
			g.Expect(err.Error()).To(ContainSubstring("host key"))
			g.Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"))
		})
	}
}

// otherRSAKey returns an RSA public key, the type of the test server's host
// key, that is not the server's.
func otherRSAKey(t testing.TB) ssh.PublicKey {
	t.Helper()
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// newSSHKey returns a PEM private key and its public key.
func newSSHKey(t testing.TB) ([]byte, ssh.PublicKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block), sshPub
}

// serverHostKey connects to an SSH server only to learn its host key.
func serverHostKey(t testing.TB, addr string) ssh.PublicKey {
	t.Helper()
	var key ssh.PublicKey
	errGotKey := errors.New("got host key")
	cfg := &ssh.ClientConfig{
		User: "git",
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			key = k
			return errGotKey
		},
	}
	if _, err := ssh.Dial("tcp", addr, cfg); !errors.Is(err, errGotKey) {
		t.Fatalf("read host key of %s: %v", addr, err)
	}
	return key
}

// grepDir returns the files under dir that contain s.
func grepDir(t testing.TB, dir, s string) []string {
	t.Helper()
	var hits []string
	err := filepathWalk(dir, func(p string, content []byte) {
		if strings.Contains(p, s) || strings.Contains(string(content), s) {
			hits = append(hits, p)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}
