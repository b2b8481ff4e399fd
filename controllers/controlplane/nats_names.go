package controlplane

import (
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// Names of the NATS component's objects (spec §6.1). They align with the Controller's own NATS
// naming, so none of them may change.
const (
	natsStatefulSetName     = natsconf.StatefulSetName
	natsHeadlessServiceName = natsconf.HeadlessServiceName
	// natsServiceName is Service nats: cluster, leaf and MQTT ports; its address is the hub's.
	natsServiceName = "nats"
	// natsServerServiceName is Service nats-server: client and monitor ports.
	natsServerServiceName = "nats-server"
	// natsServiceAccountName also names the Role and the RoleBinding.
	natsServiceAccountName = "nats"

	natsConfigMapName    = natsconf.ConfigMapName
	natsConfigKey        = natsconf.ConfigKey
	natsJWTBundleMapName = "iofog-nats-jwt-bundle"

	natsOperatorSeedSecretName = "nats-operator-seed"       //nolint:gosec // G101: a Secret name, not a credential.
	natsOperatorSeedKey        = "seed"                     //nolint:gosec // G101: a key name, not a credential.
	natsSysCredsSecretName     = "nats-creds-sys-admin-hub" //nolint:gosec // G101: a Secret name, not a credential.
	natsSysCredsKey            = "admin-hub.creds"          //nolint:gosec // G101: a key name, not a credential.
	natsJetStreamKeyPrefix     = "nats-jetstream-key-"
	natsJetStreamKeyKey        = "jsk"

	natsSiteCASecretName     = "nats-site-ca"          //nolint:gosec // G101: a Secret name, not a credential.
	natsLocalCASecretName    = "default-nats-local-ca" //nolint:gosec // G101: a Secret name, not a credential.
	natsSiteServerSecretName = natsconf.SiteServerSecret
	natsMQTTServerSecretName = natsconf.MQTTServerSecret

	// natsDataVolume is the StatefulSet's PVC template (PVCs js-data-nats-<i>).
	natsDataVolume = "js-data"
)

// Annotations of the NATS component.
const (
	// annotationNatsReplicas on the two NATS server Secrets records the replica count their SANs
	// were made for; a different count regenerates them (spec §6.6).
	annotationNatsReplicas = "datasance.com/nats-replicas"
	// annotationRestartedAt on the NATS pod template rolls every pod after a scale-down, so the
	// remaining servers forget the removed routes (spec §6.8). kubectl rollout restart uses it too.
	annotationRestartedAt = "kubectl.kubernetes.io/restartedAt"
)

// requeueNatsBootstrap: GET /nats/bootstrap failed (the Controller is starting, is not the
// Kubernetes control plane yet, lacks its NATS Secrets, or answered 5xx). The bootstrap is
// retried until it answers; nothing NATS is written without it.
const requeueNatsBootstrap = 10 * time.Second

// natsJetStreamKeySecretName is the JetStream encryption key Secret of a ControlPlane (spec §6.5).
func natsJetStreamKeySecretName(cpName string) string { return natsJetStreamKeyPrefix + cpName }

// natsCASecrets are the two NATS CA Secrets: generated once, imported into the Controller's CA
// catalog, never updated or deleted by the operator (spec §6.6, §8.3).
var natsCASecrets = []string{natsSiteCASecretName, natsLocalCASecretName}

// natsTLSSecretNames are the four NATS TLS Secrets, all of which a user may bring (spec §6.6).
var natsTLSSecretNames = []string{natsSiteCASecretName, natsLocalCASecretName, natsSiteServerSecretName, natsMQTTServerSecretName}

// Reasons of the Normal Events the NATS component emits (failures use the condition reasons).
const (
	eventNatsCertificateCreated = "NatsCertificateCreated"
	eventNatsRestarted          = "NatsRestarted"
	eventNatsRemoved            = "NatsRemoved"
)
