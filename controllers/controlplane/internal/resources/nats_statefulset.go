package resources

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// Paths inside the NATS pod (docs/controlplane.md#nats-statefulset). The image reads them from the env below.
//
// server.conf is mounted in a subdirectory of the TLS directory: the image's wrapper reloads
// nats-server on any change it sees in that directory and its immediate subdirectories
// (NATS_SSL_DIR, internal/watch WatchDir), while its watch of the config file's own directory
// only reacts to events named server.conf (internal/watch WatchConfigFile), which the kubelet's
// update of a ConfigMap volume never makes: it swaps the ..data symlink
// (docs/controlplane.md#nats-reloads).
const (
	natsConfigDir       = natsconf.CertsDir + "/server-conf"
	natsJWTMountDir     = "/tmp/nats/jwt"
	natsCredsDir        = "/etc/nats/creds" //nolint:gosec // G101: a mount path, not a credential.
	natsJetStreamKeyDir = "/etc/nats/jetstream"
)

// natsSecretMode is the mode of the Secret files in the NATS pods: readable by the owner and by
// the fsGroup the process runs in, by no one else.
const natsSecretMode int32 = 0o440

// Volume names of the NATS pod.
const (
	natsVolumeSiteServer = "nats-site-server"
	natsVolumeMQTTServer = "nats-mqtt-server"
	natsVolumeConfig     = "nats-config"
	natsVolumeJWTBundle  = "nats-jwt-bundle"
	natsVolumeCreds      = "nats-creds" //nolint:gosec // G101: a volume name, not a credential.
	natsVolumeJSKey      = "jetstream-key"
)

// NatsStorage is the js-data PVC template's size and class. Both are immutable once the
// StatefulSet exists, so the reconciler passes the live values then (docs/controlplane.md#create-once-objects).
type NatsStorage struct {
	Size      resource.Quantity
	ClassName string
}

// DesiredNatsStorage is the storage spec.nats.jetStream asks for (default 10Gi, the cluster's
// default class). The CRD's pattern admits only valid quantities; anything else falls back to the
// default rather than failing a builder.
func DesiredNatsStorage(spec *datasancev3.ControlPlaneSpec) NatsStorage {
	st := NatsStorage{Size: resource.MustParse(datasancev3.DefaultStorageSize)}
	if spec.Nats == nil || spec.Nats.JetStream == nil {
		return st
	}
	if q, err := resource.ParseQuantity(spec.Nats.JetStream.StorageSize); err == nil && !q.IsZero() {
		st.Size = q
	}
	st.ClassName = spec.Nats.JetStream.StorageClassName
	return st
}

// Equal reports whether two storage settings are the same (1Gi equals 1024Mi).
func (a NatsStorage) Equal(b NatsStorage) bool {
	return a.Size.Cmp(b.Size) == 0 && a.ClassName == b.ClassName
}

// NatsWorkload holds the StatefulSet inputs that do not come from the spec.
type NatsWorkload struct {
	// Image is the NATS image in force.
	Image string
	// Storage is the js-data template (DesiredNatsStorage, or the live values).
	Storage NatsStorage
	// PodAnnotations are the pod template's annotations (restartedAt, docs/controlplane.md#nats-statefulset).
	PodAnnotations map[string]string
}

// NatsStatefulSet is StatefulSet nats (docs/controlplane.md#nats-statefulset): replicas.nats
// servers (3 when omitted, at least 2) behind nats-headless, each with a js-data volume,
// server.conf, the JWT bundle, the hub creds, the JetStream key and the two server certificates.
func NatsStatefulSet(cp *datasancev3.ControlPlane, w NatsWorkload) *appsv1ac.StatefulSetApplyConfiguration {
	labels := StandardLabels(cp.Name, ComponentNats)
	pod := corev1ac.PodSpec().
		WithServiceAccountName(natsServiceAccountName).
		// The NATS image uses no Kubernetes client, so the pods carry no API token (nats_rbac.go).
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(podSecurityContext(imageUser)).
		WithContainers(natsContainer(cp, w.Image)).
		WithVolumes(natsVolumes(cp)...)
	// NATS servers on the same node would all go down with it: one server per node where the
	// nodes allow it (docs/controlplane.md#disruption-and-spread).
	withPlacement(pod, cp.Spec.Pods.Nats, topologySpread(cp.Name, ComponentNats, true))
	if ps := cp.Spec.Images.PullSecret; ps != "" {
		pod.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(ps))
	}
	template := corev1ac.PodTemplateSpec().
		WithLabels(labels).
		WithSpec(pod)
	if len(w.PodAnnotations) > 0 {
		template.WithAnnotations(w.PodAnnotations)
	}
	return appsv1ac.StatefulSet(NatsStatefulSetName, cp.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(appsv1ac.StatefulSetSpec().
			WithReplicas(cp.Spec.NatsReplicas()).
			WithServiceName(NatsHeadlessServiceName).
			WithSelector(metaLabelSelector(selectorLabels(cp.Name, ComponentNats))).
			// JetStream data outlives the StatefulSet and the ControlPlane: a PVC is deleted by
			// hand only (docs/controlplane.md#spec-changes).
			WithPersistentVolumeClaimRetentionPolicy(appsv1ac.StatefulSetPersistentVolumeClaimRetentionPolicy().
				WithWhenDeleted(appsv1.RetainPersistentVolumeClaimRetentionPolicyType).
				WithWhenScaled(appsv1.RetainPersistentVolumeClaimRetentionPolicyType)).
			WithTemplate(template).
			WithVolumeClaimTemplates(natsDataClaim(cp, w.Storage)))
}

// natsContainer is the one NATS server container.
func natsContainer(cp *datasancev3.ControlPlane, image string) *corev1ac.ContainerApplyConfiguration {
	resources := ComponentResources(&cp.Spec, ComponentNats)
	c := corev1ac.Container().
		WithName(ComponentNats).
		WithImage(image).
		WithImagePullPolicy(corev1.PullAlways).
		WithPorts(
			containerPort("client", natsconf.ClientPort),
			containerPort("cluster", natsconf.ClusterPort),
			containerPort("leaf", natsconf.LeafPort),
			containerPort("mqtt", natsconf.MQTTPort),
			containerPort("monitor", natsconf.MonitorPort),
		).
		WithEnv(natsEnv(cp, resources)...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(natsVolumeSiteServer).WithMountPath(natsconf.CertsDir+"/"+natsSiteServerSecretName).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(natsVolumeMQTTServer).WithMountPath(natsconf.CertsDir+"/"+natsMQTTServerSecretName).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(natsVolumeConfig).WithMountPath(natsConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(natsVolumeJWTBundle).WithMountPath(natsJWTMountDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(natsVolumeCreds).WithMountPath(natsCredsDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(natsVolumeJSKey).WithMountPath(natsJetStreamKeyDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(NatsDataVolume).WithMountPath(natsconf.StoreDir),
		).
		WithReadinessProbe(natsProbe(10)).
		WithLivenessProbe(natsProbe(30)).
		WithSecurityContext(containerSecurityContext())
	withResources(c, resources)
	return c
}

// natsProbe is the JetStream health check of the readiness (period 10 s) and liveness (30 s)
// probes (docs/controlplane.md#nats-statefulset).
func natsProbe(periodSeconds int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().
			WithPath("/healthz?js-enabled-only=true").
			WithPort(intstr.FromInt32(natsconf.MonitorPort))).
		WithInitialDelaySeconds(10).
		WithTimeoutSeconds(5).
		WithPeriodSeconds(periodSeconds).
		WithFailureThreshold(3)
}

// natsEnv is the container env (docs/controlplane.md#nats-statefulset): fixed values, the JetStream key from its Secret and
// the pod name, which the image substitutes for $SELFNAME in server.conf.
func natsEnv(cp *datasancev3.ControlPlane, resources datasancev3.Resources) []*corev1ac.EnvVarApplyConfiguration {
	port := func(p int32) string { return strconv.Itoa(int(p)) }
	env := []*corev1ac.EnvVarApplyConfiguration{
		envValue("NATS_CONF", natsConfigDir+"/"+NatsConfigKey),
		envValue("NATS_SERVER_MODE", "server"),
		envValue("NATS_JWT_DIR", natsconf.JWTDir),
		envValue("NATS_JWT_MOUNT_DIR", natsJWTMountDir),
		envValue("NATS_TLS_DIR", natsconf.CertsDir),
		envValue("NATS_SSL_DIR", natsconf.CertsDir),
		envValue("NATS_CERT_NAME", natsSiteServerSecretName),
		envValue("NATS_MQTT_CERT_NAME", natsMQTTServerSecretName),
		envValue("NATS_CREDS_DIR", natsCredsDir),
		envValue("NATS_SYS_USER_CRED_PATH", natsCredsDir+"/"+NatsSysCredsKey),
		envValue("NATS_SERVER_PORT", port(natsconf.ClientPort)),
		envValue("NATS_CLUSTER_PORT", port(natsconf.ClusterPort)),
		envValue("NATS_LEAF_PORT", port(natsconf.LeafPort)),
		envValue("NATS_MQTT_PORT", port(natsconf.MQTTPort)),
		envValue("NATS_MONITOR_PORT", port(natsconf.MonitorPort)),
		envValue("NATS_HTTP_PORT", port(natsconf.MonitorPort)),
		envValue("NATS_JETSTREAM_STORE_DIR", natsconf.StoreDir),
		envSecret(natsconf.JetStreamKeyEnv, NatsJetStreamKeySecretName(cp.Name), NatsJetStreamKeyKey),
		envValue("JETSTREAM_PREV_KEY", ""),
		envField("SELFNAME", "metadata.name"),
	}
	if limit := goMemLimit(resources); limit != "" {
		env = append(env, envValue("GOMEMLIMIT", limit))
	}
	return env
}

// natsVolumes are the pod's Secret and ConfigMap volumes (js-data comes from the claim template).
func natsVolumes(cp *datasancev3.ControlPlane) []*corev1ac.VolumeApplyConfiguration {
	secret := func(volume, secretName string, items ...*corev1ac.KeyToPathApplyConfiguration) *corev1ac.VolumeApplyConfiguration {
		src := corev1ac.SecretVolumeSource().WithSecretName(secretName).WithDefaultMode(natsSecretMode)
		if len(items) > 0 {
			src.WithItems(items...)
		}
		return corev1ac.Volume().WithName(volume).WithSecret(src)
	}
	configMap := func(volume, name string) *corev1ac.VolumeApplyConfiguration {
		return corev1ac.Volume().WithName(volume).
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(name))
	}
	return []*corev1ac.VolumeApplyConfiguration{
		secret(natsVolumeSiteServer, natsSiteServerSecretName),
		secret(natsVolumeMQTTServer, natsMQTTServerSecretName),
		configMap(natsVolumeConfig, NatsConfigMapName),
		configMap(natsVolumeJWTBundle, NatsJWTBundleMapName),
		secret(natsVolumeCreds, NatsSysCredsSecretName,
			corev1ac.KeyToPath().WithKey(NatsSysCredsKey).WithPath(NatsSysCredsKey)),
		secret(natsVolumeJSKey, NatsJetStreamKeySecretName(cp.Name)),
	}
}

// natsDataClaim is the js-data PVC template: ReadWriteOnce, the JetStream storage size and class.
func natsDataClaim(cp *datasancev3.ControlPlane, st NatsStorage) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	spec := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: st.Size}))
	if st.ClassName != "" {
		spec.WithStorageClassName(st.ClassName)
	}
	// No namespace, kind or apiVersion: a claim template is not an object of its own.
	claim := &corev1ac.PersistentVolumeClaimApplyConfiguration{}
	return claim.WithName(NatsDataVolume).
		WithLabels(selectorLabels(cp.Name, ComponentNats)).
		WithSpec(spec)
}

// String describes the storage for messages: "10Gi (class fast)" or "10Gi (default class)".
func (a NatsStorage) String() string {
	if a.ClassName == "" {
		return a.Size.String() + " (default class)"
	}
	return a.Size.String() + " (class " + a.ClassName + ")"
}
