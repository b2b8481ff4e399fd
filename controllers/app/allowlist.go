package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Where the operator may connect. The operator pod usually reaches more than a tenant should
// (cluster-internal services, cloud metadata endpoints): the manager flags
// --app-allowed-git-hosts and --app-allowed-vcluster-servers restrict the Git hosts of
// spec.git.url and the API servers of Tenants' kubeconfigs. Empty lists allow any host but the
// cloud metadata endpoints (metadataHost), so existing installations keep working; a platform
// team sets them to its Git host and its vcluster Service domain (docs/app-controller.md,
// "Connections"). A metadata endpoint is reached only when an allow-list names it exactly.

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
	if metadataHost(host) {
		return namedExactly(allowed, host), host
	}
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

// metadataHosts are the names of cloud instance metadata services (GCE, Azure and others answer
// on these as on 169.254.169.254): a request from the operator pod reads the node's identity
// and, on many clouds, credentials.
var metadataHosts = []string{"metadata.google.internal", "metadata.goog", "metadata", "metadata.azure.com", "instance-data", "instance-data.ec2.internal"}

// metadataHost reports whether host (lower case, no port) is a cloud metadata endpoint: one of
// metadataHosts, or an IP literal in the link-local ranges (169.254.0.0/16, where AWS, GCE,
// Azure, OpenStack and others serve it, and fe80::/10) or AWS's IPv6 fd00:ec2::254. Names are
// not resolved: a name that resolves to such an address is refused only by an allow-list.
func metadataHost(host string) bool {
	if slices.Contains(metadataHosts, strings.TrimSuffix(host, ".")) {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLinkLocalUnicast() || ip.Equal(net.ParseIP("fd00:ec2::254")))
}

// namedExactly reports whether an allow-list entry is host itself (with or without a port), not a
// wildcard that happens to cover it.
func namedExactly(allowed []string, host string) bool {
	for _, entry := range allowed {
		entry = strings.ToLower(strings.TrimSpace(entry))
		h, _, err := net.SplitHostPort(entry)
		if err != nil {
			h = entry
		}
		if h == host {
			return true
		}
	}
	return false
}

// checkGitHost refuses a repository URL outside the Git host allow-list.
func (r *Reconciler) checkGitHost(rawURL string) error {
	if ok, host := hostAllowed(r.Options.AllowedGitHosts, rawURL); !ok {
		return fmt.Errorf("%w: %q is not in --app-allowed-git-hosts%s", errGitHostNotAllowed, host, metadataNote(host))
	}
	return nil
}

// checkVClusterServer refuses an API server outside the vCluster server allow-list.
func (r *Reconciler) checkVClusterServer(server string) error {
	if ok, host := hostAllowed(r.Options.AllowedVClusterServers, server); !ok {
		return fmt.Errorf("%w: %q is not in --app-allowed-vcluster-servers%s", errVClusterServerNotAllowed, host, metadataNote(host))
	}
	return nil
}

// metadataNote explains, in a refusal, why a metadata endpoint is refused with an empty list.
func metadataNote(host string) string {
	if !metadataHost(host) {
		return ""
	}
	return " (a cloud metadata endpoint: refused unless the list names it exactly)"
}
