package gitops

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubeopera/kubeopera-operator/internal/gitcred"
)

// FuzzAuthFromSecretData: whatever a Git credentials Secret holds, parsing it never panics,
// every error wraps ErrInvalidAuth and never carries a password, token or key, and an accepted
// Secret always yields the same credentials identity for the same data.
func FuzzAuthFromSecretData(f *testing.F) {
	f.Add("https://git.example.com/team/apps.git", "user", "pa55word-xyz", "", "", "", "")
	f.Add("https://git.example.com/team/apps.git", "", "", "tok-123456", "", "", "")
	f.Add("https://git.example.com/team/apps.git", "", "", "", "bearer-abcdef", "", "")
	f.Add("ssh://git@git.example.com/team/apps.git", "", "passphrase-1", "", "", "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n", "git.example.com ssh-ed25519 AAAA")
	f.Add("https://user:hunter2-pw@git.example.com/x.git", "", "", "", "", "", "")
	f.Add("file:///etc/passwd", "", "", "", "", "", "")
	f.Add("", "a", "b", "c", "d", "e", "f")

	f.Fuzz(func(t *testing.T, url, user, password, token, bearer, identity, knownHosts string) {
		data := map[string][]byte{}
		for k, v := range map[string]string{
			gitcred.Username: user, gitcred.Password: password, gitcred.Token: token,
			gitcred.BearerToken: bearer, gitcred.Identity: identity, gitcred.KnownHosts: knownHosts,
		} {
			if v != "" {
				data[k] = []byte(v)
			}
		}
		a, err := AuthFromSecretData(url, data)
		if err != nil {
			if !errors.Is(err, ErrInvalidAuth) {
				t.Fatalf("error does not wrap ErrInvalidAuth: %v", err)
			}
			for _, s := range []string{password, token, bearer, identity} {
				if len(s) >= 6 && strings.Contains(err.Error(), s) {
					t.Fatalf("error carries a secret %q: %v", s, err)
				}
			}
			return
		}
		b, err := AuthFromSecretData(url, data)
		if err != nil || a.id != b.id {
			t.Fatalf("same data, different outcome: %v, %q vs %q", err, a.id, b.id)
		}
	})
}
