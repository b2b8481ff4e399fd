package resources

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// Controller object names and ports (docs/controlplane.md#iofog-controller-objects to #controller-deployment).
const (
	ControllerName        = "controller"
	ControllerAPIPort     = 51121
	controllerAPIPortName = "controller-api"
	consolePortName       = "console"
	consoleServicePort    = 80
	sqlitePVCName         = "controller-sqlite"
	sqliteVolume          = "sqlite"
	sqliteSize            = "1Gi"
	// SQLiteDataDir is where PVC controller-sqlite is mounted and the Controller keeps its SQLite
	// database (SQLITE_STORAGE_DIR): a path of its own, not the image's package directory, which
	// moved between releases (docs/controlplane.md#sqlite-database).
	SQLiteDataDir = "/var/lib/controller/sqlite"
	// statusPath is the Controller's health endpoint.
	statusPath = iofog.APIPath + "/status"
	// livePath is the Controller's liveness endpoint, served from 3.8.2 on.
	livePath = iofog.APIPath + "/live"
)

// ControllerRules are the Controller Role's rules (docs/controlplane.md#iofog-controller-objects): it manages ConfigMaps and
// Services, reads StatefulSets, and may update the StatefulSet nats. Of the Secrets it may get
// only the CA Secrets the operator imports into it (docs/controlplane.md#operand-rbac): the
// Controller reads a Kubernetes Secret only when it imports a CA of type k8s-secret.
func ControllerRules(spec *datasancev3.ControlPlaneSpec) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: verbsAll},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: ControllerCASecretNames(spec), Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, Verbs: verbsRead},
		{APIGroups: []string{"apps"}, Resources: []string{"statefulsets"}, ResourceNames: []string{ComponentNats}, Verbs: []string{"update", "patch"}},
	}
}

// ControllerCASecretNames are the CA Secrets the operator imports into the Controller's CA
// catalog: the router's two and, with NATS on, the NATS two.
func ControllerCASecretNames(spec *datasancev3.ControlPlaneSpec) []string {
	names := append([]string(nil), RouterCASecretNames...)
	if spec.NatsEnabled() {
		names = append(names, NatsCASecretNames()...)
	}
	return names
}

// ControllerService is Service controller (docs/controlplane.md#controller-service).
func ControllerService(cp *datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration {
	svc := exposedService(cp, ComponentController, ControllerName, cp.Spec.Services.Controller,
		servicePort(controllerAPIPortName, ControllerAPIPort, intstr.FromInt32(ControllerAPIPort)),
		servicePort(consolePortName, consoleServicePort, intstr.FromInt32(cp.Spec.ConsolePortOrDefault())),
	)
	if b := cp.Spec.Services.Controller; b != nil && b.Address != "" &&
		datasancev3.ServiceType(b) == corev1.ServiceTypeLoadBalancer {
		svc.Spec.WithLoadBalancerIP(b.Address)
	}
	return svc
}

// ControllerIngress is Ingress controller (docs/controlplane.md#controller-ingress), built in Ingress mode only: / to the
// console, /api/v3 to the API and, in embedded auth mode, the Controller's own OIDC issuer /oidc to the API, TLS only
// with a secretName (docs/controlplane.md#ingress-tls-block).
func ControllerIngress(cp *datasancev3.ControlPlane) *networkingv1ac.IngressApplyConfiguration {
	m := MetaFor(cp, ComponentController, ControllerName)
	in := cp.Spec.Ingresses.Controller
	path := func(p, port string) *networkingv1ac.HTTPIngressPathApplyConfiguration {
		return networkingv1ac.HTTPIngressPath().
			WithPath(p).
			WithPathType(networkingv1.PathTypePrefix).
			WithBackend(networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().
				WithName(ControllerName).
				WithPort(networkingv1ac.ServiceBackendPort().WithName(port))))
	}
	paths := []*networkingv1ac.HTTPIngressPathApplyConfiguration{
		path("/", consolePortName),
		path(iofog.APIPath, controllerAPIPortName),
	}
	if cp.Spec.Auth.Mode == datasancev3.AuthModeEmbedded {
		paths = append(paths, path(iofog.EmbeddedIssuerPath, controllerAPIPortName))
	}
	spec := networkingv1ac.IngressSpec().WithRules(networkingv1ac.IngressRule().
		WithHost(in.Host).
		WithHTTP(networkingv1ac.HTTPIngressRuleValue().WithPaths(paths...)))
	if in.IngressClassName != "" {
		spec.WithIngressClassName(in.IngressClassName)
	}
	if in.SecretName != "" {
		spec.WithTLS(networkingv1ac.IngressTLS().WithHosts(in.Host).WithSecretName(in.SecretName))
	}
	ing := networkingv1ac.Ingress(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(spec)
	if len(in.Annotations) > 0 {
		ing.WithAnnotations(in.Annotations)
	}
	return ing
}

// SqlitePVC is PVC controller-sqlite (docs/controlplane.md#iofog-controller-objects): 1Gi ReadWriteOnce, created once.
func SqlitePVC(cp *datasancev3.ControlPlane) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	m := MetaFor(cp, ComponentController, sqlitePVCName)
	// No owner reference: the Controller's database outlives the ControlPlane (data policy in
	// the package doc).
	return corev1ac.PersistentVolumeClaim(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithSpec(corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(sqliteSize)})))
}

// controllerProbe is a probe on the Controller API's path: an HTTP GET, or with https: true a curl
// inside the pod that does not verify the pod's own certificate.
func controllerProbe(spec *datasancev3.ControlPlaneSpec, path string) *corev1ac.ProbeApplyConfiguration {
	if spec.ControllerHTTPS() {
		return corev1ac.Probe().WithExec(corev1ac.ExecAction().WithCommand("curl", "-sfk", "https://127.0.0.1:51121"+path))
	}
	return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromInt32(ControllerAPIPort)).WithScheme(corev1.URISchemeHTTP))
}

// liveSince is the first Controller release that serves GET /api/v3/live.
var liveSince = [3]int{3, 8, 2}

// ControllerServesLiveness reports whether the Controller image serves GET /api/v3/live: its tag
// is a release version (optionally v-prefixed) of 3.8.2 or later. Any other tag (latest, a
// digest only, a build name) gets no liveness probe: a probe on a route the image does not serve
// would restart a working Controller over and over (docs/controlplane.md#controller-deployment).
func ControllerServesLiveness(image string) bool {
	v, pre, ok := controllerVersion(image)
	if !ok {
		return false
	}
	for j := range v {
		if v[j] != liveSince[j] {
			return v[j] > liveSince[j]
		}
	}
	return pre == "" // 3.8.2 itself, not one of its pre-releases
}

// controllerVersion reads the release version of a Controller image's tag (optionally
// v-prefixed, with an optional pre-release after "-"); ok is false for any other tag (latest, a
// digest only, a build name).
func controllerVersion(image string) (v [3]int, pre string, ok bool) {
	ref, _, _ := strings.Cut(image, "@")
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return v, "", false
	}
	tag := strings.TrimPrefix(ref[i+1:], "v")
	core, pre, _ := strings.Cut(tag, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return v, "", false
	}
	for j, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, "", false
		}
		v[j] = n
	}
	return v, pre, true
}

// ControllerPodHashes are the pod-template hash annotations of the Controller Deployment.
type ControllerPodHashes struct {
	// Credentials hashes the data of the DB, auth and vault Secrets.
	Credentials string
	// tls hashes the controller TLS Secret (https only).
	TLS string
	// RestartedAt, when set, is the pod template's AnnotationRestartedAt: the time the operator
	// replaced a CA the Controller's processes keep in memory (docs/controlplane.md#cas-the-controller-makes).
	RestartedAt string
}

// ControllerDeployment is Deployment controller (docs/controlplane.md#controller-deployment).
func ControllerDeployment(cp *datasancev3.ControlPlane, images Images, urls ControllerURLs, hashes ControllerPodHashes) *appsv1ac.DeploymentApplyConfiguration {
	spec := &cp.Spec
	m := MetaFor(cp, ComponentController, ControllerName)

	readiness := controllerProbe(spec, statusPath).
		WithInitialDelaySeconds(10).WithTimeoutSeconds(10).WithPeriodSeconds(5).WithFailureThreshold(2)

	container := corev1ac.Container().
		WithName(ControllerName).
		WithImage(images.Controller).
		WithImagePullPolicy(corev1.PullAlways).
		WithPorts(
			containerPort(controllerAPIPortName, ControllerAPIPort),
			containerPort(consolePortName, spec.ConsolePortOrDefault()),
		).
		WithEnv(controllerEnv(cp, images, urls)...).
		WithReadinessProbe(readiness).
		WithSecurityContext(containerSecurityContext())
	if ControllerServesLiveness(images.Controller) {
		// Two minutes without an answer restart the Controller (a process that no longer serves,
		// e.g. the SQLite freeze 3.8.2 fixed, is not restarted by readiness).
		container.WithLivenessProbe(controllerProbe(spec, livePath).
			WithInitialDelaySeconds(30).WithTimeoutSeconds(10).WithPeriodSeconds(20).WithFailureThreshold(6))
	}
	withResources(container, ComponentResources(spec, ComponentController))
	pod := corev1ac.PodSpec().
		WithServiceAccountName(ControllerName).
		WithSecurityContext(podSecurityContext(imageUser))
	var spread []*corev1ac.TopologySpreadConstraintApplyConfiguration
	if ControllerReplicated(spec) {
		spread = topologySpread(cp.Name, ComponentController, false)
	}
	withPlacement(pod, spec.Pods.Controller, spread)
	annotations := map[string]string{AnnotationCredentialsHash: hashes.Credentials}
	if hashes.RestartedAt != "" {
		annotations[AnnotationRestartedAt] = hashes.RestartedAt
	}
	if spec.ControllerHTTPS() {
		container.WithVolumeMounts(corev1ac.VolumeMount().WithName(controllerCertVolume).WithMountPath(controllerCertDir + "/").WithReadOnly(true))
		pod.WithVolumes(secretVolume(controllerCertVolume, spec.Controller.SecretName))
		annotations[AnnotationTLSHash] = hashes.TLS
	}
	if spec.UsesSQLite() {
		container.WithVolumeMounts(corev1ac.VolumeMount().WithName(sqliteVolume).WithMountPath(SQLiteDataDir))
		pod.WithVolumes(corev1ac.Volume().WithName(sqliteVolume).WithPersistentVolumeClaim(
			corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(sqlitePVCName)))
	}
	pod.WithContainers(container)

	dspec := appsv1ac.DeploymentSpec().
		WithReplicas(spec.ControllerReplicas()).
		WithSelector(metaLabelSelector(selectorLabels(cp.Name, ComponentController))).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(m.Labels).
			WithAnnotations(annotations).
			WithSpec(pod))
	if spec.UsesSQLite() {
		// One pod holds the ReadWriteOnce volume: the old pod must go before the new one starts.
		dspec.WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType))
	} else {
		dspec.WithStrategy(appsv1ac.DeploymentStrategy().
			WithType(appsv1.RollingUpdateDeploymentStrategyType).
			WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
				WithMaxUnavailable(intstr.FromInt32(0)).
				WithMaxSurge(intstr.FromInt32(1)))).
			WithMinReadySeconds(5)
	}
	return appsv1ac.Deployment(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(dspec)
}
