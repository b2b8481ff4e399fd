package natsconf

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ErrInvalidParams is wrapped by Render when Params cannot produce a valid
// server.conf (an invalid spec, or bootstrap data missing).
var ErrInvalidParams = errors.New("invalid server.conf parameters")

// Params are the inputs of server.conf (docs/controlplane.md#nats-server-configuration).
type Params struct {
	// Name is the ControlPlane's metadata.name, used as cluster.name.
	Name string
	// Namespace is the ControlPlane's namespace, used as jetstream.domain.
	Namespace string
	// Replicas is the StatefulSet's replica count (the caller applies the
	// minimum of 2); it decides the ordinal cluster routes.
	Replicas int
	// OperatorJWT and SystemAccount come from the Controller's bootstrap.
	OperatorJWT   string
	SystemAccount string
	// MemoryStore and FileStore are Kubernetes quantities (e.g. "10Gi") or
	// empty for DefaultMemoryStore / DefaultFileStore; see ConvertSize.
	MemoryStore, FileStore string
	// ExternalAddress is the LB or ingress address of the NATS Service, empty
	// when unknown (then no leafnodes.advertise is written; docs/controlplane.md#external-nats-address).
	ExternalAddress string
	// LeafPort is ingresses.nats.leafPort; <= 0 means LeafPort (7422).
	LeafPort int
}

// Render returns the complete server.conf for p. existing is the current
// server.conf of the ConfigMap ("" if none): only its cluster.routes are
// used, see Routes. Output is deterministic for equal inputs.
func Render(p Params, existing string) (string, error) {
	if err := p.validate(); err != nil {
		return "", fmt.Errorf("render server.conf: %w", err)
	}
	memoryStore, err := storeSize("max_memory_store", p.MemoryStore, DefaultMemoryStore)
	if err != nil {
		return "", fmt.Errorf("render server.conf: %w", err)
	}
	fileStore, err := storeSize("max_file_store", p.FileStore, DefaultFileStore)
	if err != nil {
		return "", fmt.Errorf("render server.conf: %w", err)
	}
	advertise, err := leafAdvertise(p.ExternalAddress, p.LeafPort)
	if err != nil {
		return "", fmt.Errorf("render server.conf: %w", err)
	}

	w := &confWriter{}
	w.comment("NATS server configuration written by kubeopera-operator; it is rewritten on")
	w.comment("every reconcile. Only cluster routes other than nats-<i>.nats-headless are kept.")
	w.line("port", strconv.Itoa(ClientPort))
	w.line("server_name", serverNameRef)
	w.line("pid_file", quote(PIDFile))
	w.line("http_port", strconv.Itoa(MonitorPort))
	w.blank()
	w.line("operator", quote(p.OperatorJWT))
	w.line("system_account", quote(p.SystemAccount))
	w.blank()

	w.open("jetstream")
	w.line("store_dir", quote(StoreDir))
	w.line("domain", quote(p.Namespace))
	w.line("max_memory_store", memoryStore)
	w.line("max_file_store", fileStore)
	w.line("cipher", "chachapoly")
	w.line("key", jetStreamKeyRef)
	w.line("prev_encryption_key", quote(""))
	w.close()
	w.blank()

	w.open("cluster")
	w.line("name", quote(p.Name))
	w.line("port", strconv.Itoa(ClusterPort))
	w.line("no_advertise", "true")
	w.array("routes", Routes(p.Replicas, existing))
	w.tls(SiteServerSecret, true)
	w.close()
	w.blank()

	w.open("leafnodes")
	w.line("port", strconv.Itoa(LeafPort))
	if advertise != "" {
		w.line("advertise", quote(advertise))
	}
	w.tls(SiteServerSecret, true)
	w.close()
	w.blank()

	w.open("mqtt")
	w.line("port", strconv.Itoa(MQTTPort))
	w.tls(MQTTServerSecret, false)
	w.close()
	w.blank()

	w.open("resolver")
	w.line("type", "full")
	w.line("dir", quote(JWTDir))
	w.line("allow_delete", "false")
	w.line("interval", quote("2m"))
	w.close()
	return w.String(), nil
}

func (p Params) validate() error {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"name", p.Name}, {"namespace", p.Namespace}, {"operator JWT", p.OperatorJWT},
		{"system account", p.SystemAccount},
	} {
		if strings.TrimSpace(f.value) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: empty %s", ErrInvalidParams, strings.Join(missing, ", "))
	}
	if p.Replicas < 1 {
		return fmt.Errorf("%w: replicas %d, want at least 1", ErrInvalidParams, p.Replicas)
	}
	if p.LeafPort > 65535 {
		return fmt.Errorf("%w: leaf port %d out of range", ErrInvalidParams, p.LeafPort)
	}
	return nil
}

// storeSize converts q (or def when q is empty) and checks that it is a size
// NATS reads, so nothing but a number with a unit reaches the unquoted value.
func storeSize(setting, q, def string) (string, error) {
	if q != "" && !admittedSize.MatchString(q) {
		return "", fmt.Errorf("%w: %s %q: want an integer with an optional unit k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi or Ei", ErrInvalidParams, setting, q)
	}
	size := ConvertSize(q)
	if size == "" {
		size = def
	}
	if !natsSize.MatchString(size) {
		return "", fmt.Errorf("%w: %s %q: want an integer with an optional unit k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi or Ei", ErrInvalidParams, setting, q)
	}
	return size, nil
}

// leafAdvertise returns "<address>:<port>" for leafnodes.advertise, or "" if
// address is empty. IPv6 literals are bracketed.
func leafAdvertise(address string, port int) (string, error) {
	address = strings.TrimSpace(address)
	if address == "" {
		return "", nil
	}
	if port <= 0 {
		port = LeafPort
	}
	host := strings.TrimSuffix(strings.TrimPrefix(address, "["), "]")
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return "", fmt.Errorf("%w: external address %q: want a host name or IP address without a port", ErrInvalidParams, address)
	}
	if strings.ContainsAny(host, " \t\r\n/[]") {
		return "", fmt.Errorf("%w: external address %q is not a host name or IP address", ErrInvalidParams, address)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}
