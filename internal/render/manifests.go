package render

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// File names inside the app's folder.
const (
	FileDeployment    = "deployment.yaml"
	FileService       = "service.yaml"
	FileIngress       = "ingress.yaml"
	FileKustomization = "kustomization.yaml"
)

// ClusterIssuerAnnotation tells cert-manager which ClusterIssuer signs the Ingress certificate.
const ClusterIssuerAnnotation = "cert-manager.io/cluster-issuer"

// Manifests renders the files of the app's folder: deployment.yaml, service.yaml (when the app
// has ports: a Service needs at least one), ingress.yaml (when an Ingress is asked for) and
// kustomization.yaml listing them. Every object carries an explicit metadata.namespace.
func Manifests(app *kubeoperav1alpha1.KubeOperaApp) (map[string][]byte, error) {
	objects := []struct {
		file string
		obj  any
	}{{FileDeployment, Deployment(app)}}
	if svc := Service(app); svc != nil {
		objects = append(objects, struct {
			file string
			obj  any
		}{FileService, svc})
	}
	if ing := Ingress(app); ing != nil {
		objects = append(objects, struct {
			file string
			obj  any
		}{FileIngress, ing})
	}
	files := make(map[string][]byte, len(objects)+1)
	resources := make([]string, 0, len(objects))
	for _, o := range objects {
		b, err := marshalObject(o.obj)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", o.file, err)
		}
		files[o.file] = b
		resources = append(resources, o.file)
	}
	k, err := marshalObject(kustomizeFile{
		APIVersion: "kustomize.config.k8s.io/v1beta1",
		Kind:       "Kustomization",
		Resources:  resources,
	})
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", FileKustomization, err)
	}
	files[FileKustomization] = k
	return files, nil
}

// kustomizeFile is the kustomization.yaml of the app's folder. Flux would generate one listing
// every file when it is missing; writing it keeps the folder self-describing and makes stray
// files in the folder inert.
type kustomizeFile struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// Deployment renders the app's Deployment.
func Deployment(app *kubeoperav1alpha1.KubeOperaApp) *appsv1.Deployment {
	spec := app.Spec.App
	container := corev1.Container{
		Name:            app.Name,
		Image:           spec.Image,
		Command:         spec.Command,
		Args:            spec.Args,
		Env:             spec.Env,
		Resources:       spec.Resources,
		LivenessProbe:   spec.LivenessProbe,
		ReadinessProbe:  spec.ReadinessProbe,
		SecurityContext: containerSecurity(spec.Security),
	}
	for _, p := range spec.Ports {
		container.Ports = append(container.Ports, corev1.ContainerPort{
			Name:          p.Name,
			ContainerPort: p.ContainerPort,
			Protocol:      protocol(p),
		})
	}
	pod := corev1.PodSpec{Containers: []corev1.Container{container}, SecurityContext: podSecurity(spec.Security)}
	if app.Spec.Registry != nil && app.Spec.Registry.SecretRef.Name != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: app.Spec.Registry.SecretRef.Name}}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: objectMeta(app, app.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(app)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels(app)},
				Spec:       pod,
			},
		},
	}
}

// Service renders the app's Service, or nil when the app has no ports.
func Service(app *kubeoperav1alpha1.KubeOperaApp) *corev1.Service {
	if len(app.Spec.App.Ports) == 0 {
		return nil
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(app, app.Name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selectorLabels(app),
		},
	}
	for _, p := range app.Spec.App.Ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
			Name:       p.Name,
			Port:       servicePort(p),
			TargetPort: intstr.FromString(p.Name),
			Protocol:   protocol(p),
		})
	}
	return svc
}

// Ingress renders the app's Ingress, or nil unless TLS or a host is asked for (and the app has a
// TCP port to route to). It routes / of the host to the Service port of the first TCP port: an
// Ingress carries HTTP, never to a UDP or SCTP port (Validate refuses an app that asks for an
// Ingress with no TCP port). With TLS it carries the cert-manager.io/cluster-issuer annotation
// and a tls block for the host.
func Ingress(app *kubeoperav1alpha1.KubeOperaApp) *networkingv1.Ingress {
	in := app.Spec.Ingress
	if !wantsIngress(app) {
		return nil
	}
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: objectMeta(app, app.Name),
	}
	if in.ClassName != "" {
		ing.Spec.IngressClassName = ptr.To(in.ClassName)
	}
	first, _ := firstTCPPort(app)
	ing.Spec.Rules = []networkingv1.IngressRule{{
		Host: in.Host,
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{
				Path:     "/",
				PathType: ptr.To(networkingv1.PathTypePrefix),
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: app.Name,
					Port: networkingv1.ServiceBackendPort{Number: servicePort(first)},
				}},
			}},
		}},
	}}
	if in.TLS {
		if in.ClusterIssuer != "" {
			ing.Annotations = map[string]string{ClusterIssuerAnnotation: in.ClusterIssuer}
		}
		ing.Spec.TLS = []networkingv1.IngressTLS{{
			Hosts:      []string{in.Host},
			SecretName: TLSSecretName(app),
		}}
	}
	return ing
}

// URL is the address the app is reached at through its Ingress: https:// when the Ingress has
// TLS, http:// otherwise. It is "" without an Ingress, without a host, and for a wildcard host
// ("*.example.com"): the Ingress answers for every name below the domain, and no one of them is
// the app's address (the domain itself is not among them).
func URL(app *kubeoperav1alpha1.KubeOperaApp) string {
	if !wantsIngress(app) {
		return ""
	}
	host := app.Spec.Ingress.Host
	if host == "" || strings.HasPrefix(host, "*") {
		return ""
	}
	scheme := "http"
	if app.Spec.Ingress.TLS {
		scheme = "https"
	}
	return scheme + "://" + host
}

func wantsIngress(app *kubeoperav1alpha1.KubeOperaApp) bool {
	_, routable := firstTCPPort(app)
	return ingressAsked(app) && routable
}

// ingressAsked reports whether the spec asks for an Ingress: TLS or a host.
func ingressAsked(app *kubeoperav1alpha1.KubeOperaApp) bool {
	in := app.Spec.Ingress
	return in != nil && (in.TLS || in.Host != "")
}

// firstTCPPort is the app's first TCP port, the one its Ingress routes to.
func firstTCPPort(app *kubeoperav1alpha1.KubeOperaApp) (kubeoperav1alpha1.AppPort, bool) {
	for _, p := range app.Spec.App.Ports {
		if protocol(p) == corev1.ProtocolTCP {
			return p, true
		}
	}
	return kubeoperav1alpha1.AppPort{}, false
}

func objectMeta(app *kubeoperav1alpha1.KubeOperaApp, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: TargetNamespace(app), Labels: Labels(app)}
}

func servicePort(p kubeoperav1alpha1.AppPort) int32 {
	if p.ServicePort != 0 {
		return p.ServicePort
	}
	return p.ContainerPort
}

func protocol(p kubeoperav1alpha1.AppPort) corev1.Protocol {
	if p.Protocol != "" {
		return p.Protocol
	}
	return corev1.ProtocolTCP
}

// podSecurity is the pod half of the restricted Pod Security Standard: non-root, RuntimeDefault
// seccomp, and the ids the app chose.
func podSecurity(sec *kubeoperav1alpha1.AppSecurity) *corev1.PodSecurityContext {
	psc := &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if sec != nil {
		psc.RunAsUser, psc.RunAsGroup, psc.FSGroup = sec.RunAsUser, sec.RunAsGroup, sec.FSGroup
	}
	return psc
}

// containerSecurity is the container half: no privilege escalation, every capability dropped,
// NET_BIND_SERVICE added back only when asked for.
func containerSecurity(sec *kubeoperav1alpha1.AppSecurity) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	if sec != nil {
		for _, c := range sec.AddCapabilities {
			sc.Capabilities.Add = append(sc.Capabilities.Add, corev1.Capability(c))
		}
		sc.ReadOnlyRootFilesystem = sec.ReadOnlyRootFilesystem
	}
	return sc
}
