// Package routerconf renders and merges skrouterd.json, the configuration of
// the interior Skupper router kept in ConfigMap "iofog-router" (docs/controlplane.md#router-configuration).
//
// Both functions are pure: they take and return bytes, and leave reading and
// writing the ConfigMap to the router sub-reconciler.
package routerconf

// ConfigMap holding the router configuration.
const (
	ConfigMapName = "iofog-router"
	ConfigKey     = "skrouterd.json"
)

// ConfigVersion is the template version stored under ConfigVersionKey in the
// router entity's metadata. Bump it whenever Render's output changes, so that
// Merge replaces the managed entries of existing ConfigMaps.
const (
	ConfigVersion    = "1.0.0"
	ConfigVersionKey = "iofog-config"
)

// RouterID is the router id and site name of the default router.
const RouterID = "default-router"

// Ports of the router container. Only AMQPSPort, InterRouterPort and EdgePort
// are exposed by the Service (docs/controlplane.md#router-service-and-address).
const (
	AMQPPort        = 5672 // plain AMQP, localhost only
	AMQPSPort       = 5671
	HTTPPort        = 9090 // /healthz and metrics
	InterRouterPort = 55671
	EdgePort        = 45671
)

// TLS material mounted into the router pod: one directory per server Secret,
// named after it, under CertsDir (docs/controlplane.md#router-deployment).
const (
	CertsDir                = "/etc/skupper-router-certs"
	SiteServerProfile       = "router-site-server"
	LocalServerProfile      = "router-local-server"
	SystemDefaultProfile    = "system-default"
	systemCABundle          = "/etc/pki/tls/certs/ca-bundle.crt"
	siteVersion             = "iofog"
	platform                = "kubernetes"
	edgeListenerName        = "iofog-router-edge"
	interRouterListenerName = "iofog-router-inter-router"
	amqpListenerName        = "amqp"
	amqpsListenerName       = "amqps"
	httpListenerName        = "@9090"
)

// Entity types of skrouterd.json.
const (
	typeRouter     = "router"
	typeSite       = "site"
	typeSSLProfile = "sslProfile"
	typeListener   = "listener"
	typeAddress    = "address"
	typeLog        = "log"
)

// templateTypes are taken wholesale from the template on merge: existing
// entries of these types are dropped (docs/controlplane.md#router-configuration rule 2).
var templateTypes = map[string]bool{typeRouter: true, typeSite: true, typeAddress: true, typeLog: true}

// ownedNames are the sslProfile and listener names the operator owns; on
// merge, existing entries with these names are replaced by the template's.
// This operator's choice (docs/controlplane.md#router-configuration and
// docs/controlplane.md#router-configmap-merge): system-default is owned too, so an existing copy
// is replaced instead of duplicated.
var ownedNames = map[string]map[string]bool{
	typeSSLProfile: {SystemDefaultProfile: true, SiteServerProfile: true, LocalServerProfile: true},
	typeListener: {
		edgeListenerName: true, amqpListenerName: true, amqpsListenerName: true,
		httpListenerName: true, interRouterListenerName: true,
	},
}
