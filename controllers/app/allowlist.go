package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Where the operator may connect. The operator pod usually reaches more than a tenant should
// (cluster-internal services, cloud metadata endpoints): the manager flags
// --app-allowed-git-hosts and --app-allowed-vcluster-servers restrict the Git hosts of
// spec.git.url and the API servers of Tenants' kubeconfigs. Empty lists allow any host (the
// default, so existing installations keep working); a platform team sets them to its Git host
// and its vcluster Service domain.

var (
	// errGitHostNotAllowed: spec.git.url names a host outside the Git host allow-list.
	errGitHostNotAllowed = errors.New("git host not allowed")
	// errVClusterServerNotAllowed: a Tenant's kubeconfig names an API server outside the
	// vCluster server allow-list.
	errVClusterServerNotAllowed = errors.New("vCluster API server not allowed")
)

// hostAllowed reports whether the host[:port] of a URL matches an entry of allowed (any host
// when allowed is empty). An entry is "host" (any port), "host:port", or "*.domain" (any host
// below domain, any port). Names compare case-insensitively; nothing is resolved.
func hostAllowed(allowed []string, rawURL string) (bool, string) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return len(allowed) == 0, ""
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if len(allowed) == 0 {
		return true, host
	}
	for _, entry := range allowed {
		entry = strings.ToLower(strings.TrimSpace(entry))
		h, p, err := net.SplitHostPort(entry)
		if err != nil {
			h, p = entry, ""
		}
		if p != "" && p != port {
			continue
		}
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true, host
			}
			continue
		}
		if h == host {
			return true, host
		}
	}
	return false, host
}

// checkGitHost refuses a repository URL outside the Git host allow-list.
func (r *Reconciler) checkGitHost(rawURL string) error {
	if ok, host := hostAllowed(r.Options.AllowedGitHosts, rawURL); !ok {
		return fmt.Errorf("%w: %q is not in --app-allowed-git-hosts", errGitHostNotAllowed, host)
	}
	return nil
}

// checkVClusterServer refuses an API server outside the vCluster server allow-list.
func (r *Reconciler) checkVClusterServer(server string) error {
	if ok, host := hostAllowed(r.Options.AllowedVClusterServers, server); !ok {
		return fmt.Errorf("%w: %q is not in --app-allowed-vcluster-servers", errVClusterServerNotAllowed, host)
	}
	return nil
}
