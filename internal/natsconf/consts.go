// Package natsconf renders server.conf, the NATS server configuration kept in
// ConfigMap "iofog-nats-config" (docs/controlplane.md#nats-server-configuration).
//
// Render is pure: the previous server.conf is passed in as a string so that
// routes added by the Controller survive, and nothing is read or written here.
package natsconf

// ConfigMap holding server.conf.
const (
	ConfigMapName = "iofog-nats-config"
	ConfigKey     = "server.conf"
)

// Ports of the NATS container, fixed in server.conf and the container env
// (docs/controlplane.md#nats-ports); ingresses.nats.*Port never change them.
const (
	ClientPort  = 4222
	ClusterPort = 6222
	LeafPort    = 7422
	MQTTPort    = 8883
	MonitorPort = 8222
)

// Names the routes and SANs are derived from: pods of StatefulSet "nats" are
// reachable as nats-<i>.nats-headless.
const (
	StatefulSetName     = "nats"
	HeadlessServiceName = "nats-headless"
)

// Paths inside the NATS pod (docs/controlplane.md#nats-statefulset).
const (
	PIDFile  = "/home/runner/run/nats.pid"
	StoreDir = "/home/runner/data"
	JWTDir   = "/home/runner/nats/jwt"
	// CertsDir holds one directory per server Secret, named after it.
	CertsDir         = "/etc/nats/certs"
	SiteServerSecret = "nats-site-server" //nolint:gosec // G101: a Secret name, not a credential.
	MQTTServerSecret = "nats-mqtt-server" //nolint:gosec // G101: a Secret name, not a credential.
)

// JetStream store limits written when the CR leaves them empty, in NATS units.
const (
	DefaultMemoryStore = "1G"
	DefaultFileStore   = "10G"
)

// serverNameRef is written verbatim as server_name: a NATS variable reference
// resolved from the pod's SELFNAME env (downward API metadata.name).
const serverNameRef = "$SELFNAME"

// JetStreamKeyEnv is the container environment variable that carries the
// JetStream encryption key, from Secret nats-jetstream-key-<name>. server.conf
// names it (jetstream.key is the reference $JETSTREAM_KEY) and never holds the
// key: the file lives in a ConfigMap, readable by anyone who may view the
// namespace. nats-server resolves a reference the file does not define from
// its environment, and the image's wrapper starts it with the container's
// environment (Datasance/nats-server internal/nats/nats.go, Server.Start).
const JetStreamKeyEnv = "JETSTREAM_KEY"

const jetStreamKeyRef = "$" + JetStreamKeyEnv

// tlsTimeout is the TLS handshake timeout of the cluster, leaf and MQTT listeners.
const tlsTimeout = "3s"
