package tenant

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// fuzzKubeconfig is an exported vCluster kubeconfig with the fields the fuzzer varies.
func fuzzKubeconfig(server, token, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: vc
contexts:
- name: vc
  context: {cluster: vc, user: vc}
clusters:
- name: vc
  cluster:
    server: %q
    certificate-authority-data: ""
%s
users:
- name: vc
  user:
    token: %q
`, server, extra, token)
}

// FuzzRESTConfig: whatever a Tenant's kubeconfig Secret holds, RESTConfig never panics, errors
// wrap ErrKubeconfigInvalid and never echo the credential, and an accepted config points at an
// https URL that is never localhost (localhost is replaced by the Tenant's Service address).
func FuzzRESTConfig(f *testing.F) {
	f.Add(fuzzKubeconfig("https://localhost:8443", "s3cr3t-token", ""), "s3cr3t-token")
	f.Add(fuzzKubeconfig("https://vc.team-a.svc:443", "tok-abc", ""), "tok-abc")
	f.Add(fuzzKubeconfig("http://10.0.0.1", "tok-abc", "    insecure-skip-tls-verify: true"), "tok-abc")
	f.Add(fuzzKubeconfig("https://x", "tok", "    certificate-authority: /etc/passwd"), "tok")
	f.Add("users: [{name: vc, user: {exec: {command: /bin/sh}}}]", "none")
	f.Add("{{{{", "")
	f.Add(fuzzKubeconfig("https://LOCALHOST", "secret-value-1", ""), "secret-value-1")

	tn := testfixture.Tenant(testfixture.TenantNamed("vc"), testfixture.TenantInNamespace("team-a"))
	f.Fuzz(func(t *testing.T, kubeconfig, secret string) {
		cfg, err := RESTConfig([]byte(kubeconfig), tn, ConfigOptions{})
		if err != nil {
			if !errors.Is(err, ErrKubeconfigInvalid) {
				t.Fatalf("error does not wrap ErrKubeconfigInvalid: %v", err)
			}
			if len(secret) >= 8 && strings.Contains(kubeconfig, "token: \""+secret) && strings.Contains(err.Error(), secret) {
				t.Fatalf("error echoes the token: %v", err)
			}
			return
		}
		u, perr := url.Parse(cfg.Host)
		if perr != nil {
			t.Fatalf("accepted host %q does not parse: %v", cfg.Host, perr)
		}
		if u.Scheme != "https" {
			t.Fatalf("accepted a non-https server %q", cfg.Host)
		}
		if strings.EqualFold(u.Hostname(), "localhost") {
			t.Fatalf("localhost was not rewritten: %q", cfg.Host)
		}
		if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
			t.Fatalf("accepted an exec or auth-provider credential")
		}
		if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.BearerTokenFile != "" {
			t.Fatalf("accepted a file reference: %+v", cfg.TLSClientConfig)
		}
	})
}
