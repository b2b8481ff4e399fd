package resources

import (
	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// Names of the NATS component's objects (docs/controlplane.md#nats-objects). They align with the Controller's own NATS
// naming, so none of them may change.
const (
	NatsStatefulSetName     = natsconf.StatefulSetName
	NatsHeadlessServiceName = natsconf.HeadlessServiceName
	// NatsServiceName is Service nats: cluster, leaf and MQTT ports; its address is the hub's.
	NatsServiceName = "nats"
	// NatsServerServiceName is Service nats-server: client and monitor ports.
	NatsServerServiceName = "nats-server"
	// natsServiceAccountName also names the Role and the RoleBinding.
	natsServiceAccountName = "nats"

	NatsConfigMapName    = natsconf.ConfigMapName
	NatsConfigKey        = natsconf.ConfigKey
	NatsJWTBundleMapName = "iofog-nats-jwt-bundle"

	NatsOperatorSeedSecretName = "nats-operator-seed"       //nolint:gosec // G101: a Secret name, not a credential.
	NatsOperatorSeedKey        = "seed"                     //nolint:gosec // G101: a key name, not a credential.
	NatsSysCredsSecretName     = "nats-creds-sys-admin-hub" //nolint:gosec // G101: a Secret name, not a credential.
	NatsSysCredsKey            = "admin-hub.creds"          //nolint:gosec // G101: a key name, not a credential.
	natsJetStreamKeyPrefix     = "nats-jetstream-key-"
	NatsJetStreamKeyKey        = "jsk"

	natsSiteCASecretName     = "nats-site-ca"          //nolint:gosec // G101: a Secret name, not a credential.
	natsLocalCASecretName    = "default-nats-local-ca" //nolint:gosec // G101: a Secret name, not a credential.
	natsSiteServerSecretName = natsconf.SiteServerSecret
	natsMQTTServerSecretName = natsconf.MQTTServerSecret

	// NatsDataVolume is the StatefulSet's PVC template (PVCs js-data-nats-<i>).
	NatsDataVolume = "js-data"
)

// Annotations of the NATS component.
const (
	// AnnotationNatsReplicas on the two NATS server Secrets records the replica count their SANs
	// were made for; a different count regenerates them (docs/controlplane.md#nats-tls-secrets).
	AnnotationNatsReplicas = "datasance.com/nats-replicas"
	// AnnotationRestartedAt on the NATS pod template rolls every pod after a scale-down, so the
	// remaining servers forget the removed routes (docs/controlplane.md#nats-statefulset). kubectl rollout restart uses it too.
	AnnotationRestartedAt = "kubectl.kubernetes.io/restartedAt"
)

// NatsJetStreamKeySecretName is the JetStream encryption key Secret of a ControlPlane (docs/controlplane.md#jetstream-encryption-key).
func NatsJetStreamKeySecretName(cpName string) string { return natsJetStreamKeyPrefix + cpName }

// NatsCASecrets are the two NATS CA Secrets: generated once, imported into the Controller's CA
// catalog, never updated or deleted by the operator (docs/controlplane.md#nats-tls-secrets, docs/controlplane.md#create-once-objects).
var NatsCASecrets = []string{natsSiteCASecretName, natsLocalCASecretName}

// natsTLSSecretNames are the four NATS TLS Secrets, all of which a user may bring (docs/controlplane.md#nats-tls-secrets).
var natsTLSSecretNames = []string{natsSiteCASecretName, natsLocalCASecretName, natsSiteServerSecretName, natsMQTTServerSecretName}

// NatsCASecretNames are the NATS CA Secrets the Controller component imports into the
// Controller's catalog when NATS is enabled (docs/controlplane.md#hub-registration-and-ca-import).
func NatsCASecretNames() []string { return append([]string(nil), NatsCASecrets...) }

// NatsReferencedSecretNames are the NATS Secrets a ControlPlane may read without owning them —
// the four TLS Secrets a user may bring (docs/controlplane.md#nats-tls-secrets) — for the Secret watch. None when NATS is
// disabled.
func NatsReferencedSecretNames(spec *datasancev3.ControlPlaneSpec) []string {
	if !spec.NatsEnabled() {
		return nil
	}
	return append([]string(nil), natsTLSSecretNames...)
}
