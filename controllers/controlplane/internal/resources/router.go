package resources

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/routerconf"
)

// Router object names (docs/controlplane.md#router-objects, docs/controlplane.md#router-tls-secrets).
//
//nolint:gosec // G101: Secret names, not credentials.
const (
	RouterName                  = "router"
	routerSiteCASecretName      = "router-site-ca"
	routerLocalCASecretName     = "default-router-local-ca"
	RouterSiteServerSecretName  = "router-site-server"
	RouterLocalServerSecretName = "router-local-server"
	routerCommand               = "/home/skrouterd/bin/router"
	routerConfigMountDir        = "/tmp"
	routerConfigVolume          = "router-config"
)

// RouterTLSSecretNames are the router's four TLS Secrets (docs/controlplane.md#router-tls-secrets).
var RouterTLSSecretNames = []string{routerSiteCASecretName, routerLocalCASecretName, RouterSiteServerSecretName, RouterLocalServerSecretName}

// RouterCASecretNames are imported into the Controller's CA catalog (docs/controlplane.md#hub-registration-and-ca-import).
var RouterCASecretNames = []string{routerSiteCASecretName, routerLocalCASecretName}

// RouterRules are the router Role's rules (docs/controlplane.md#router-objects). Of the Secrets it
// may get only its own four TLS Secrets (docs/controlplane.md#operand-rbac).
var RouterRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods", "configmaps", "services"}, Verbs: verbsRead},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: RouterTLSSecretNames, Verbs: []string{"get"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: verbsAll},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
}

// RouterService is Service router (docs/controlplane.md#router-service-and-address).
func RouterService(cp *datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration {
	return exposedService(cp, ComponentRouter, RouterName, cp.Spec.Services.Router,
		servicePort("router-message", routerconf.AMQPSPort, intstr.FromString("amqps")),
		servicePort("router-interior", routerconf.InterRouterPort, intstr.FromString("inter-router")),
		servicePort("router-edge", routerconf.EdgePort, intstr.FromString("edge")),
	)
}

// routerServerHosts are the SANs of both router server certificates (docs/controlplane.md#router-tls-secrets).
func routerServerHosts(namespace, address string) []string {
	return []string{"router." + namespace + ".svc.cluster.local", address}
}

// RouterCertificates are the router's TLS Secrets in generation order: CAs first.
func RouterCertificates(namespace, address string) []TLSSecretSpec {
	hosts := routerServerHosts(namespace, address)
	return []TLSSecretSpec{
		{Name: routerSiteCASecretName, CommonName: routerSiteCASecretName},
		{Name: routerLocalCASecretName, CommonName: routerLocalCASecretName},
		{Name: RouterSiteServerSecretName, CommonName: "iofog-router", CAName: routerSiteCASecretName, Hosts: hosts},
		{Name: RouterLocalServerSecretName, CommonName: "iofog-router-local", CAName: routerLocalCASecretName, Hosts: hosts},
	}
}

// RouterConfigMap is ConfigMap iofog-router holding skrouterd.json (docs/controlplane.md#router-configuration).
func RouterConfigMap(cp *datasancev3.ControlPlane, config []byte) *corev1ac.ConfigMapApplyConfiguration {
	m := MetaFor(cp, ComponentRouter, routerconf.ConfigMapName)
	return corev1ac.ConfigMap(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(cp)).
		WithData(map[string]string{routerconf.ConfigKey: string(config)})
}

// RouterDeployment is Deployment router (docs/controlplane.md#router-deployment). tlsHash is the hash of the two server
// Secrets it mounts, so that a rotated certificate rolls the pod.
func RouterDeployment(cp *datasancev3.ControlPlane, image, tlsHash string) *appsv1ac.DeploymentApplyConfiguration {
	m := MetaFor(cp, ComponentRouter, RouterName)
	podLabels := mergeMaps(m.Labels, routerPodLabels)
	probe := func(initialDelay int32) *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromInt32(routerconf.HTTPPort)).WithScheme(corev1.URISchemeHTTP)).
			WithInitialDelaySeconds(initialDelay).WithTimeoutSeconds(1).WithPeriodSeconds(10).WithFailureThreshold(3)
	}
	container := corev1ac.Container().
		WithName(RouterName).
		WithImage(image).
		WithImagePullPolicy(corev1.PullAlways).
		WithCommand(routerCommand).
		WithPorts(
			containerPort("amqps", routerconf.AMQPSPort),
			containerPort("http", routerconf.HTTPPort),
			containerPort("inter-router", routerconf.InterRouterPort),
			containerPort("edge", routerconf.EdgePort),
		).
		WithEnv(
			envValue("APPLICATION_NAME", RouterName),
			envValue("QDROUTERD_AUTO_MESH_DISCOVERY", "QUERY"),
			envValue("QDROUTERD_CONF", routerConfigMountDir+"/"+routerconf.ConfigKey),
			envValue("QDROUTERD_CONF_TYPE", "json"),
			envValue("SSL_PROFILE_PATH", routerconf.CertsDir),
			envValue("SKUPPER_SITE_ID", routerconf.RouterID),
			envValue("SKUPPER_PLATFORM", "kubernetes"),
			envField("POD_NAMESPACE", "metadata.namespace"),
			envField("POD_IP", "status.podIP"),
		).
		WithReadinessProbe(probe(1)).
		WithLivenessProbe(probe(60)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(RouterSiteServerSecretName).WithMountPath(routerconf.CertsDir+"/"+RouterSiteServerSecretName).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(RouterLocalServerSecretName).WithMountPath(routerconf.CertsDir+"/"+RouterLocalServerSecretName).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(routerConfigVolume).WithMountPath(routerConfigMountDir),
		).
		WithSecurityContext(containerSecurityContext())
	withResources(container, ComponentResources(&cp.Spec, ComponentRouter))
	pod := corev1ac.PodSpec().
		WithServiceAccountName(RouterName).
		WithSecurityContext(podSecurityContext(platformUser)).
		WithContainers(container).
		WithVolumes(
			secretVolume(RouterSiteServerSecretName, RouterSiteServerSecretName),
			secretVolume(RouterLocalServerSecretName, RouterLocalServerSecretName),
			corev1ac.Volume().WithName(routerConfigVolume).WithConfigMap(corev1ac.ConfigMapVolumeSource().
				WithName(routerconf.ConfigMapName).
				WithItems(corev1ac.KeyToPath().WithKey(routerconf.ConfigKey).WithPath(routerconf.ConfigKey))),
		)
	// One router pod: no spread of its own.
	withPlacement(pod, cp.Spec.Pods.Router, nil)

	return appsv1ac.Deployment(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metaLabelSelector(selectorLabels(cp.Name, ComponentRouter))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(podLabels).
				WithAnnotations(map[string]string{
					"prometheus.io/scrape": "true",
					"prometheus.io/port":   "9090",
					AnnotationTLSHash:      tlsHash,
				}).
				WithSpec(pod)))
}
