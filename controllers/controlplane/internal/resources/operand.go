package resources

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// operandUID is the user the Controller and NATS images are built for (useradd --uid 10000,
// USER 10000): their code and state live in its home directory /home/runner, which only that UID
// may enter (docs/controlplane.md#pod-identity-and-openshift).
const operandUID int64 = 10000

// identity is whom an operand pod runs as.
type identity int

const (
	// imageUser pins UID, GID and fsGroup operandUID: the Controller and NATS, whose images
	// cannot run as any other user. On OpenShift their ServiceAccounts may use SCC nonroot-v2
	// (NonrootSCCRoleBinding), which admits a fixed non-root UID.
	imageUser identity = iota
	// platformUser pins no ID: the router, whose image runs as any user. A cluster without
	// SCCs runs the image's USER (10000, non-root); OpenShift's restricted-v2 assigns a UID and
	// fsGroup from the namespace's range.
	platformUser
)

// podSecurityContext is the restricted pod security context of an operand pod: non-root, the
// runtime's default seccomp profile, and the IDs of its identity.
func podSecurityContext(id identity) *corev1ac.PodSecurityContextApplyConfiguration {
	sc := corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	if id == imageUser {
		sc.WithRunAsUser(operandUID).WithRunAsGroup(operandUID).WithFSGroup(operandUID)
	}
	return sc
}

// containerSecurityContext is the restricted container security context: no privilege
// escalation, every capability dropped.
func containerSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL"))
}

// ObjectMeta is what every owned object's metadata holds.
type ObjectMeta struct {
	Name, Namespace string
	Labels          map[string]string
	// cp owns the object.
	cp *datasancev3.ControlPlane
}

// MetaFor returns the metadata of a component's object called name.
func MetaFor(cp *datasancev3.ControlPlane, component, name string) ObjectMeta {
	return ObjectMeta{Name: name, Namespace: cp.Namespace, Labels: StandardLabels(cp.Name, component), cp: cp}
}

// ServiceAccount is a component's ServiceAccount; the image pull Secret, when set, is attached
// to it (docs/controlplane.md#image-pull-secret).
func ServiceAccount(m ObjectMeta, pullSecret string) *corev1ac.ServiceAccountApplyConfiguration {
	sa := corev1ac.ServiceAccount(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(m.cp))
	if pullSecret != "" {
		sa.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(pullSecret))
	}
	return sa
}

// Role is a component's Role with rules.
func Role(m ObjectMeta, rules ...rbacv1.PolicyRule) *rbacv1ac.RoleApplyConfiguration {
	r := rbacv1ac.Role(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(m.cp))
	for _, rule := range rules {
		ac := rbacv1ac.PolicyRule().WithAPIGroups(rule.APIGroups...).WithResources(rule.Resources...).WithVerbs(rule.Verbs...)
		if len(rule.ResourceNames) > 0 {
			ac.WithResourceNames(rule.ResourceNames...)
		}
		r.WithRules(ac)
	}
	return r
}

// RoleBinding binds the ServiceAccount and Role of the same name.
func RoleBinding(m ObjectMeta) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(m.cp)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(m.Name)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(m.Name).WithNamespace(m.Namespace))
}

// Secret is a component's Secret of type typ holding data, owned by the ControlPlane: the one
// builder of the Secrets the operator applies or creates from an apply configuration
// (credentials, bootstrap material, the TLS Secrets through TLSSecret).
func Secret(cp *datasancev3.ControlPlane, component, name string, typ corev1.SecretType, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	m := MetaFor(cp, component, name)
	return corev1ac.Secret(m.Name, m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(cp)).
		WithType(typ).
		WithData(data)
}

// Verb sets of the operand Roles. Never "*": every verb is named.
var (
	verbsRead = []string{"get", "list", "watch"}
	verbsAll  = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

// serviceExposure applies a Service block's type, annotations and traffic policy (docs/controlplane.md#service-exposure) to
// svc. The type is defaulted first (LoadBalancer), then every decision tests the defaulted type.
// exposedService is a component's Service, exposed as its spec.services block says (type,
// annotations, externalTrafficPolicy: docs/controlplane.md#service-exposure), selecting the component's pods.
func exposedService(cp *datasancev3.ControlPlane, component, name string, block *datasancev3.ServiceSpec,
	ports ...*corev1ac.ServicePortApplyConfiguration) *corev1ac.ServiceApplyConfiguration {
	svc := corev1ac.Service(name, cp.Namespace).
		WithLabels(StandardLabels(cp.Name, component)).
		WithOwnerReferences(ownerReference(cp)).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(selectorLabels(cp.Name, component)).
			WithPorts(ports...))
	serviceExposure(svc, block)
	return svc
}

func serviceExposure(svc *corev1ac.ServiceApplyConfiguration, block *datasancev3.ServiceSpec) {
	typ := datasancev3.ServiceType(block)
	svc.Spec.WithType(typ)
	if block != nil && len(block.Annotations) > 0 {
		svc.WithAnnotations(block.Annotations)
	}
	if policy := externalTrafficPolicy(typ, block); policy != "" {
		svc.Spec.WithExternalTrafficPolicy(policy)
	}
}

// externalTrafficPolicy is set only for LoadBalancer (default Local) and NodePort (default
// Cluster) Services, never for ClusterIP.
func externalTrafficPolicy(typ corev1.ServiceType, block *datasancev3.ServiceSpec) corev1.ServiceExternalTrafficPolicy {
	var policy corev1.ServiceExternalTrafficPolicy
	if block != nil {
		policy = block.ExternalTrafficPolicy
	}
	switch typ {
	case corev1.ServiceTypeLoadBalancer:
		return defaultIfEmpty(policy, corev1.ServiceExternalTrafficPolicyLocal)
	case corev1.ServiceTypeNodePort:
		return defaultIfEmpty(policy, corev1.ServiceExternalTrafficPolicyCluster)
	default:
		return ""
	}
}

func defaultIfEmpty[T ~string](v, def T) T {
	if v == "" {
		return def
	}
	return v
}

// LoadBalancerAddress is the first ingress point of a load balancer status: its IP, or its
// hostname when it has no IP (docs/controlplane.md#url-resolution). Empty when none is published yet.
func LoadBalancerAddress(ingress []corev1.LoadBalancerIngress) string {
	if len(ingress) == 0 {
		return ""
	}
	if ingress[0].IP != "" {
		return ingress[0].IP
	}
	return ingress[0].Hostname
}

// HashData hashes named maps of Secret data in a stable order; it is what pod-template hash
// annotations of certificates hold (no guessable secret in them). Absent maps hash like empty
// ones.
func HashData(named map[string]map[string][]byte) string {
	return hashWith(sha256.New(), named)
}

// KeyedHashData is HashData as an HMAC-SHA256 under key: the credentials hash, whose inputs are
// mostly visible in the ControlPlane, so an unkeyed hash would allow guessing offline the one
// value that is not (a passwordSecretRef password).
func KeyedHashData(key []byte, named map[string]map[string][]byte) string {
	return hashWith(hmac.New(sha256.New, key), named)
}

func hashWith(h hash.Hash, named map[string]map[string][]byte) string {
	names := make([]string, 0, len(named))
	for n := range named {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		data := named[n]
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		writeField(h, n)
		for _, k := range keys {
			writeField(h, k)
			writeField(h, string(data[k]))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// writeField writes a length-prefixed field, so that concatenations cannot collide.
func writeField(h interface{ Write([]byte) (int, error) }, s string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
	_, _ = h.Write(n[:])
	_, _ = h.Write([]byte(s))
}

// NonrootSCCClusterRole is the ClusterRole OpenShift ships to grant use of its SCC nonroot-v2,
// which admits any fixed non-root UID with the rest of restricted-v2's rules
// (openshift/cluster-kube-apiserver-operator, bindata/bootkube/scc-manifests,
// 0000_20_kube-apiserver-operator_00_cr-scc-nonroot-v2.yaml).
const NonrootSCCClusterRole = "system:openshift:scc:nonroot-v2"

// NonrootSCCRoleBinding binds ServiceAccount m.Name to NonrootSCCClusterRole in its namespace,
// as RoleBinding <m.Name>-nonroot-v2: on OpenShift the pods of that ServiceAccount may then run
// as operandUID, which restricted-v2 refuses (its UIDs come from the namespace's range).
func NonrootSCCRoleBinding(m ObjectMeta) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(m.Name+"-nonroot-v2", m.Namespace).
		WithLabels(m.Labels).
		WithOwnerReferences(ownerReference(m.cp)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(NonrootSCCClusterRole)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(m.Name).WithNamespace(m.Namespace))
}
