package resources

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/conf"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// NatsConfInputs are the inputs of server.conf beyond the spec.
type NatsConfInputs struct {
	// OperatorJWT and systemAccount come from the bootstrap.
	OperatorJWT, SystemAccount string
	// ExternalAddress is the external NATS address, "" when there is none (docs/controlplane.md#external-nats-address).
	ExternalAddress string
	// Existing is the current server.conf ("" if none): its non-ordinal routes are kept.
	Existing string
	// FileStore is the JetStream file store in force when it is not what the spec asks
	// (NatsFileStoreSize of the smallest js-data volume); "" means spec.nats.jetStream.storageSize.
	FileStore string
}

// NatsServerConf renders server.conf (docs/controlplane.md#nats-server-configuration) for cp. The
// file names the JetStream key (natsconf.JetStreamKeyEnv) and never holds it. The error wraps
// natsconf.ErrInvalidParams when the inputs cannot make a valid file.
func NatsServerConf(cp *datasancev3.ControlPlane, in NatsConfInputs) (string, error) {
	p := natsconf.Params{
		Name:            cp.Name,
		Namespace:       cp.Namespace,
		Replicas:        int(cp.Spec.NatsReplicas()),
		OperatorJWT:     in.OperatorJWT,
		SystemAccount:   in.SystemAccount,
		ExternalAddress: in.ExternalAddress,
	}
	if js := natsJetStream(&cp.Spec); js != nil {
		p.MemoryStore, p.FileStore = js.MemoryStoreSize, js.StorageSize
	}
	if in.FileStore != "" {
		p.FileStore = in.FileStore
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

// NatsJWTBundleConfigMap is ConfigMap iofog-nats-jwt-bundle: account JWTs as <public key>.jwt
// (NatsJWTBundle), which the NATS image mirrors into its resolver directory; it purges the
// JetStream data of every account the directory then lacks (docs/controlplane.md#nats-jwt-bundle).
// It is created once, with Create, and never written again (the Controller adds the application
// accounts); it carries no owner reference, so that it lives as long as the JetStream data it
// guards (docs/controlplane.md#data-on-deletion).
func NatsJWTBundleConfigMap(cp *datasancev3.ControlPlane, bundle map[string]string) *corev1.ConfigMap {
	meta := natsCreateOnceMeta(cp, NatsJWTBundleMapName)
	meta.OwnerReferences = nil
	return &corev1.ConfigMap{ObjectMeta: meta, Data: bundle}
}

// NatsJWTBundle is the data of the JWT bundle for the system account and the Controller's
// accounts that belong to the hub (iofog.NatsAccount.InHubBundle: every application account;
// a leaf node's system account is not the hub's). The system account of the bootstrap is
// always in it.
func NatsJWTBundle(systemAccount, systemAccountJWT string, accounts []iofog.NatsAccount) map[string]string {
	bundle := map[string]string{}
	for _, a := range accounts {
		if a.InHubBundle() {
			bundle[NatsJWTKey(a.PublicKey)] = a.JWT
		}
	}
	bundle[NatsJWTKey(systemAccount)] = systemAccountJWT
	return bundle
}

// NatsFileStoreSize is a JetStream file store size in force (a PVC's or the claim template's) as
// the quantity server.conf takes: its canonical text when that is a JetStream size
// (natsconf.SizePattern), else its bytes.
func NatsFileStoreSize(q resource.Quantity) string {
	if s := q.String(); natsFileStorePattern.MatchString(s) {
		return s
	}
	return strconv.FormatInt(q.Value(), 10)
}

var natsFileStorePattern = regexp.MustCompile(natsconf.SizePattern)

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

// NatsJWTSubjectIssuer returns the subject and issuer claims of a NATS JWT (the key it is about
// and the key that signed it), without checking the signature; empty when token is not a JWT.
func NatsJWTSubjectIssuer(token string) (subject, issuer string) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", ""
	}
	var claims struct {
		Subject string `json:"sub"`
		Issuer  string `json:"iss"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return "", ""
	}
	return claims.Subject, claims.Issuer
}

var (
	natsVariableRef      = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	natsIncludeDirective = regexp.MustCompile(`(?i)(^|[\s{;,])include\s`)
)
