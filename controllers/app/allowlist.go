package app

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// Where the operator may connect. A KubeOperaApp is written by anyone with edit rights in a host
// namespace, and its spec.git.url and its Tenant's kubeconfig send the operator pod, with its
// credentials and its place in the network, to a host of the writer's choosing. The pod reaches
// more than a tenant should: cluster-internal Services, its own loopback, private networks, cloud
// metadata endpoints. So, by default:
//   - a Git host (--app-allowed-git-hosts) may be any public host: a cluster-internal or private
//     one (internalHost) only when an entry names it, or with --app-allow-internal-git-hosts;
//   - a vCluster API server (--app-allowed-vcluster-servers) must be an in-cluster Service
//     (DefaultAllowedVClusterServers), which is where the localhost → vcluster Service
//     replacement of an exported kubeconfig points;
//   - a cloud metadata endpoint is reached only when an entry names it exactly.
//
// A list with entries allows only its entries (and still no metadata endpoint it does not name).
// Names are never resolved: a public name that resolves to a private address passes an empty
// Git host list. An installation that must rule that out names its Git hosts, or denies the
// operator pod egress to private ranges with a NetworkPolicy (docs/app-controller.md,
// "Connections").

var (
	// errGitHostNotAllowed: spec.git.url names a host outside the Git host allow-list.
	errGitHostNotAllowed = errors.New("git host not allowed")
	// errVClusterServerNotAllowed: a Tenant's kubeconfig names an API server outside the
	// vCluster server allow-list.
	errVClusterServerNotAllowed = errors.New("vCluster API server not allowed")
)

// DefaultAllowedVClusterServers is the vCluster server allow-list when none is set: the Services
// of the host cluster, short (<tenant>.<namespace>.svc, what tenant.ServiceAddress makes of an
// exported localhost server) and fully qualified.
func DefaultAllowedVClusterServers() []string {
	return []string{"*.svc", "*.svc.cluster.local"}
}

// hostAllowed reports whether the host of rawURL may be connected to, and returns the host (lower
// case, without port). An entry of allowed is "host" (any port), "host:port", or "*.domain" (any
// host below domain, any port); names compare case-insensitively and nothing is resolved.
//   - A cloud metadata endpoint: only when an entry names it exactly.
//   - With entries: only a host an entry matches.
//   - Without entries: any host, but a cluster-internal or private one only when internal is
//     true.
//
// A URL without a host is refused unless any host is allowed: Go dials an empty host on the
// pod's own loopback.
func hostAllowed(allowed []string, internal bool, rawURL string) (bool, string) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return len(allowed) == 0 && internal, ""
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	switch {
	case metadataHost(host):
		return namedExactly(allowed, host), host
	case len(allowed) > 0:
		return matchesEntry(allowed, host, port), host
	default:
		return internal || !internalHost(host), host
	}
}

// matchesEntry reports whether host (with port, empty when the URL names none) matches an entry
// of allowed.
func matchesEntry(allowed []string, host, port string) bool {
	for _, entry := range allowed {
		h, p := splitEntry(entry)
		if p != "" && p != port {
			continue
		}
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if h == host {
			return true
		}
	}
	return false
}

// namedExactly reports whether an allow-list entry is host itself (with or without a port), not a
// wildcard that happens to cover it.
func namedExactly(allowed []string, host string) bool {
	return slices.ContainsFunc(allowed, func(entry string) bool {
		h, _ := splitEntry(entry)
		return h == host
	})
}

// splitEntry returns an allow-list entry's host (lower case) and port (empty: any).
func splitEntry(entry string) (host, port string) {
	entry = strings.ToLower(strings.TrimSpace(entry))
	h, p, err := net.SplitHostPort(entry)
	if err != nil {
		return entry, ""
	}
	return h, p
}

// metadataHosts are the names of cloud instance metadata services (GCE, Azure and others answer
// on these as on 169.254.169.254): a request from the operator pod reads the node's identity
// and, on many clouds, credentials.
var metadataHosts = []string{"metadata.google.internal", "metadata.goog", "metadata", "metadata.azure.com", "instance-data", "instance-data.ec2.internal"}

// awsIPv6Metadata is the IPv6 address of AWS's instance metadata service.
var awsIPv6Metadata = netip.MustParseAddr("fd00:ec2::254")

// metadataHost reports whether host (lower case, no port) is a cloud metadata endpoint: one of
// metadataHosts, or an IP literal in the link-local ranges (169.254.0.0/16, where AWS, GCE,
// Azure, OpenStack and others serve it, and fe80::/10, with or without a zone, IPv4-mapped
// forms included) or AWS's IPv6 fd00:ec2::254.
func metadataHost(host string) bool {
	if slices.Contains(metadataHosts, strings.TrimSuffix(host, ".")) {
		return true
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.WithZone("").Unmap()
	return addr.IsLinkLocalUnicast() || addr == awsIPv6Metadata
}

// internalSuffixes end the names that are not public DNS: Kubernetes Services (.svc,
// .cluster.local), multicast DNS (.local), and the names reserved for private use (.internal)
// and for the local host (.localhost).
var internalSuffixes = []string{".svc", ".cluster.local", ".local", ".internal", ".localhost"}

// sharedAddressSpace is 100.64.0.0/10, the carrier-grade NAT range; several Kubernetes
// distributions put pod or Service networks there.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// internalHost reports whether host (lower case, no port) is cluster-internal or private, by its
// form only (nothing is resolved):
//   - an IP literal that is loopback, private (10/8, 172.16/12, 192.168/16, fc00::/7), in
//     100.64.0.0/10, unspecified or link-local;
//   - a single-label name (gitea, localhost: resolved through the pod's DNS search domains, so
//     to a Service of the cluster), or a name ending in one of internalSuffixes;
//   - a name whose last label is a number (127.1, 0x7f.1): no public name is, and some
//     resolvers read these as IPv4 addresses.
func internalHost(host string) bool {
	if addr, err := netip.ParseAddr(host); err == nil {
		addr = addr.WithZone("").Unmap()
		return addr.IsLoopback() || addr.IsPrivate() || sharedAddressSpace.Contains(addr) ||
			addr.IsUnspecified() || addr.IsLinkLocalUnicast()
	}
	name := strings.TrimSuffix(host, ".")
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return true
	}
	if slices.ContainsFunc(internalSuffixes, func(s string) bool { return strings.HasSuffix(name, s) }) {
		return true
	}
	return numericLabel(name[dot+1:])
}

// numericLabel reports whether a DNS label is a decimal or hexadecimal (0x...) number.
func numericLabel(label string) bool {
	if hex, ok := strings.CutPrefix(label, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}

// checkGitHost refuses a repository URL outside the Git host allow-list.
func (r *Reconciler) checkGitHost(rawURL string) error {
	if ok, host := hostAllowed(r.Options.AllowedGitHosts, r.Options.AllowInternalGitHosts, rawURL); !ok {
		return fmt.Errorf("%w: %q is not in --app-allowed-git-hosts%s", errGitHostNotAllowed, host, r.gitRefusalNote(host))
	}
	return nil
}

// checkVClusterServer refuses an API server outside the vCluster server allow-list.
func (r *Reconciler) checkVClusterServer(server string) error {
	if ok, host := hostAllowed(r.Options.AllowedVClusterServers, false, server); !ok {
		note := " (" + strings.Join(r.Options.AllowedVClusterServers, ",") + ")"
		if metadataHost(host) {
			note = metadataNote
		}
		return fmt.Errorf("%w: %q is not in --app-allowed-vcluster-servers%s", errVClusterServerNotAllowed, host, note)
	}
	return nil
}

// metadataNote explains, in a refusal, why a metadata endpoint is refused whatever the list.
const metadataNote = " (a cloud metadata endpoint: refused unless the list names it exactly)"

// gitRefusalNote explains a refusal the list's entries alone do not: a metadata endpoint (refused
// unless named exactly) and, while the list is empty, a cluster-internal or private host.
func (r *Reconciler) gitRefusalNote(host string) string {
	switch {
	case metadataHost(host):
		return metadataNote
	case len(r.Options.AllowedGitHosts) == 0 && (host == "" || internalHost(host)):
		return " (a cluster-internal or private host: refused unless the list names it, or --app-allow-internal-git-hosts is set)"
	}
	return ""
}
