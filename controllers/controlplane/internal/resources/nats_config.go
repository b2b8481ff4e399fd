package resources

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats-server/v2/conf"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// NatsConfInputs are the inputs of server.conf beyond the spec.
type NatsConfInputs struct {
	// OperatorJWT and systemAccount come from the bootstrap.
	OperatorJWT, SystemAccount string
	// JetStreamKey is the jsk of Secret nats-jetstream-key-<name>.
	JetStreamKey string
	// ExternalAddress is the external NATS address, "" when there is none (docs/controlplane.md#external-nats-address).
	ExternalAddress string
	// Existing is the current server.conf ("" if none): its non-ordinal routes are kept.
	Existing string
}

// NatsServerConf renders server.conf (docs/controlplane.md#nats-server-configuration) for cp. The error wraps
// natsconf.ErrInvalidParams when the inputs cannot make a valid file.
func NatsServerConf(cp *datasancev3.ControlPlane, in NatsConfInputs) (string, error) {
	p := natsconf.Params{
		Name:            cp.Name,
		Namespace:       cp.Namespace,
		Replicas:        int(cp.Spec.NatsReplicas()),
		OperatorJWT:     in.OperatorJWT,
		SystemAccount:   in.SystemAccount,
		JetStreamKey:    in.JetStreamKey,
		ExternalAddress: in.ExternalAddress,
	}
	if js := natsJetStream(&cp.Spec); js != nil {
		p.MemoryStore, p.FileStore = js.MemoryStoreSize, js.StorageSize
	}
	if ing := cp.Spec.Ingresses.Nats; ing != nil {
		p.LeafPort = int(ing.LeafPort)
	}
	conf, err := natsconf.Render(p, in.Existing)
	if err != nil {
		return "", fmt.Errorf("build NATS server.conf: %w", err)
	}
	return conf, nil
}

// natsJetStream is spec.nats.jetStream, or nil.
func natsJetStream(spec *datasancev3.ControlPlaneSpec) *datasancev3.JetStream {
	if spec.Nats == nil {
		return nil
	}
	return spec.Nats.JetStream
}

// NatsConfigMap is ConfigMap iofog-nats-config holding server.conf.
func NatsConfigMap(cp *datasancev3.ControlPlane, serverConf string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(NatsConfigMapName, cp.Namespace).
		WithLabels(StandardLabels(cp.Name, ComponentNats)).
		WithOwnerReferences(ownerReference(cp)).
		WithData(map[string]string{NatsConfigKey: serverConf})
}

// NatsJWTBundleConfigMap is ConfigMap iofog-nats-jwt-bundle: the system account JWT as
// <public key>.jwt, which the image copies into the resolver directory (docs/controlplane.md#nats-bootstrap). It is created
// once, with Create (docs/controlplane.md#create-once-objects); the full resolver keeps later account JWTs itself.
func NatsJWTBundleConfigMap(cp *datasancev3.ControlPlane, systemAccount, systemAccountJWT string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: natsCreateOnceMeta(cp, NatsJWTBundleMapName),
		Data:       map[string]string{NatsJWTKey(systemAccount): systemAccountJWT},
	}
}

// NatsJWTKey is the JWT bundle key of an account: <public key>.jwt.
func NatsJWTKey(account string) string { return account + ".jwt" }

// ParseNatsBootstrapConf returns the operator JWT and system account of a server.conf, or empty
// strings when it has none or does not parse. It reads the file with the NATS server's own
// parser; variable references ($SELFNAME, resolved by the pod) are defined as placeholders first,
// and a file with include directives is not read (the parser would open files).
func ParseNatsBootstrapConf(serverConf string) (operatorJWT, systemAccount string) {
	if strings.TrimSpace(serverConf) == "" || natsIncludeDirective.MatchString(serverConf) {
		return "", ""
	}
	var defs strings.Builder
	seen := map[string]bool{}
	for _, m := range natsVariableRef.FindAllStringSubmatch(serverConf, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			fmt.Fprintf(&defs, "%s: \"\"\n", m[1])
		}
	}
	m, err := conf.Parse(defs.String() + serverConf)
	if err != nil {
		return "", ""
	}
	operatorJWT, _ = m["operator"].(string)
	systemAccount, _ = m["system_account"].(string)
	return operatorJWT, systemAccount
}

var (
	natsVariableRef      = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	natsIncludeDirective = regexp.MustCompile(`(?i)(^|[\s{;,])include\s`)
)
