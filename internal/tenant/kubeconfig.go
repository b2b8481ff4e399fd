package tenant

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
)

// Defaults of the vcluster kubeconfig Secret convention.
const (
	// SecretPrefix + tenant name is the Secret when status.kubeconfigSecretRef is absent.
	SecretPrefix = "vc-"
	// DefaultSecretKey holds the kubeconfig.
	DefaultSecretKey = "config"
)

// KubeconfigSecret returns the name and key of the Tenant's exported kubeconfig Secret (in the
// Tenant's namespace): status.kubeconfigSecretRef, or vc-<name> / config.
func KubeconfigSecret(t *tenantv1alpha1.Tenant) (name, key string) {
	name, key = SecretPrefix+t.Name, DefaultSecretKey
	if ref := t.Status.KubeconfigSecretRef; ref != nil && ref.Name != "" {
		name = ref.Name
		if ref.Key != "" {
			key = ref.Key
		}
	}
	return name, key
}

// ServiceAddress is the in-cluster address of the Tenant's vcluster API server, used instead of a
// localhost server.
func ServiceAddress(t *tenantv1alpha1.Tenant) string {
	return fmt.Sprintf("https://%s.%s.svc:443", t.Name, t.Namespace)
}

// ConfigOptions tune the REST config built from a kubeconfig.
type ConfigOptions struct {
	// Timeout bounds every request to the vCluster, so an unreachable vCluster fails a
	// reconcile quickly instead of holding a worker.
	Timeout time.Duration
	// QPS and Burst limit the client; zero keeps client-go's defaults.
	QPS   float32
	Burst int
	// AllowInsecureTLS accepts kubeconfigs with insecure-skip-tls-verify.
	AllowInsecureTLS bool
}

// RESTConfig builds the REST config of a Tenant's vCluster from its exported kubeconfig. The
// current context is used. A server whose host is "localhost" is replaced by ServiceAddress.
// Every answer but a watch stream is bounded by MaxResponseBytes (boundResponses).
// Errors wrap ErrKubeconfigInvalid and never contain the kubeconfig's credentials.
func RESTConfig(kubeconfig []byte, t *tenantv1alpha1.Tenant, opts ConfigOptions) (*rest.Config, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		// The loader's messages name the YAML position, not the values.
		return nil, fmt.Errorf("%w: parse: %w", ErrKubeconfigInvalid, err)
	}
	if err := checkInlineCredentials(raw, opts.AllowInsecureTLS); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKubeconfigInvalid, err)
	}
	host, err := rewriteLocalhost(cfg.Host, t)
	if err != nil {
		return nil, err
	}
	cfg.Host = host
	cfg.Timeout = opts.Timeout
	if opts.QPS > 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Burst > 0 {
		cfg.Burst = opts.Burst
	}
	cfg.UserAgent = "kubeopera-operator/app-controller"
	cfg.Wrap(boundResponses(MaxResponseBytes))
	return cfg, nil
}

// rewriteLocalhost returns server, or the Tenant's Service address when server's host is
// literally localhost.
func rewriteLocalhost(server string, t *tenantv1alpha1.Tenant) (string, error) {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: server %q is not a URL", ErrKubeconfigInvalid, server)
	}
	if strings.EqualFold(u.Hostname(), "localhost") {
		return ServiceAddress(t), nil
	}
	if u.Scheme != "https" {
		return "", fmt.Errorf("%w: server %q: scheme must be https", ErrKubeconfigInvalid, server)
	}
	return server, nil
}

// checkInlineCredentials refuses what would make the operator run programs or read files on its
// own filesystem: exec plugins, auth providers, and file references. Only the entries of the
// current context are checked, the others are never used.
func checkInlineCredentials(raw *clientcmdapi.Config, allowInsecure bool) error {
	ctx, ok := raw.Contexts[raw.CurrentContext]
	if !ok || ctx == nil {
		return fmt.Errorf("%w: current context %q not found", ErrKubeconfigInvalid, raw.CurrentContext)
	}
	cluster, ok := raw.Clusters[ctx.Cluster]
	if !ok || cluster == nil {
		return fmt.Errorf("%w: cluster %q not found", ErrKubeconfigInvalid, ctx.Cluster)
	}
	if cluster.CertificateAuthority != "" {
		return fmt.Errorf("%w: certificate-authority must be inline (certificate-authority-data)", ErrKubeconfigInvalid)
	}
	if cluster.InsecureSkipTLSVerify && !allowInsecure {
		return fmt.Errorf("%w: insecure-skip-tls-verify is not allowed", ErrKubeconfigInvalid)
	}
	user, ok := raw.AuthInfos[ctx.AuthInfo]
	if !ok || user == nil {
		return fmt.Errorf("%w: user %q not found", ErrKubeconfigInvalid, ctx.AuthInfo)
	}
	switch {
	case user.Exec != nil:
		return fmt.Errorf("%w: exec credential plugins are not allowed", ErrKubeconfigInvalid)
	case user.AuthProvider != nil:
		return fmt.Errorf("%w: auth providers are not allowed", ErrKubeconfigInvalid)
	case user.ClientCertificate != "" || user.ClientKey != "" || user.TokenFile != "":
		return fmt.Errorf("%w: client credentials must be inline (client-certificate-data, client-key-data, token)", ErrKubeconfigInvalid)
	}
	return nil
}
