package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// InvalidSpecError is a spec the API server admits but whose rendered manifests the API server
// would refuse, or that cannot work as asked: Validate found it before anything is committed.
// Errs name the spec fields.
type InvalidSpecError struct {
	Errs field.ErrorList
}

func (e *InvalidSpecError) Error() string {
	return "the rendered manifests cannot be applied as asked: " + e.Errs.ToAggregate().Error()
}

// Validate reports what the pod validation of the API server refuses in the Deployment rendered
// from app and the KubeOperaApp schema cannot refuse at admission: CEL rules over the embedded
// corev1.EnvVar and corev1.ResourceRequirements (unbounded strings and maps) exceed the API
// server's CEL cost budget. It mirrors, for the fields a KubeOperaApp embeds, the rules of
// the API server's core validation:
//   - spec.app.env[*].name: not empty, printable ASCII, no '=';
//   - spec.app.env[*].valueFrom.fieldRef: apiVersion v1, a fieldPath the kubelet exposes to
//     environment variables (metadata.name, metadata.namespace, metadata.uid, spec.nodeName,
//     spec.serviceAccountName, status.hostIP(s), status.podIP(s), or metadata.labels['<key>'] and
//     metadata.annotations['<key>'] with a qualified-name key);
//   - spec.app.env[*].valueFrom.resourceFieldRef: a resource of the app's own container
//     (containerName empty or the app's name), limits or requests of cpu, memory,
//     ephemeral-storage or hugepages-<size>;
//   - spec.app.resources: no negative quantity; extended resources in whole numbers; hugepages
//     quantities in multiples of the page size; a request at most its limit (equal to it for
//     hugepages and extended resources, whose limit is then required); hugepages only beside a
//     cpu or memory request or limit; no claims (the rendered pod declares no resource claims).
//
// and what the Service validation refuses in the rendered Service:
//   - spec.app.ports: two ports publishing the same Service port (servicePort, default
//     containerPort) and protocol (default TCP). (A CEL rule comparing every pair, even with
//     the 64 ports bounded and the protocol at most 4 characters, is estimated above the
//     budget by more than 100x.)
//
// and an Ingress that could route nowhere:
//   - spec.ingress: an Ingress carries HTTP and routes to the first TCP port; ports that are all
//     UDP or SCTP leave it none. (Admission requires a port when an Ingress is asked for; a CEL
//     rule looking at the ports' protocols is over the schema's cost budget as well.)
//
// Validate is pure; nil means every rule holds.
func Validate(app *kubeoperav1alpha1.KubeOperaApp) error {
	spec := field.NewPath("spec", "app")
	var errs field.ErrorList
	for i, e := range app.Spec.App.Env {
		errs = append(errs, validateEnv(app, e, spec.Child("env").Index(i))...)
	}
	errs = append(errs, validateResources(app.Spec.App.Resources, spec.Child("resources"))...)
	if ingressAsked(app) && len(app.Spec.App.Ports) > 0 {
		if _, ok := firstTCPPort(app); !ok {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ingress"), app.Spec.Ingress.Host,
				"an Ingress routes HTTP to the first TCP port of spec.app.ports, and all of them are UDP or SCTP"))
		}
	}
	errs = append(errs, validatePorts(app.Spec.App.Ports, spec.Child("ports"))...)
	if len(errs) == 0 {
		return nil
	}
	return &InvalidSpecError{Errs: errs}
}

func validatePorts(ports []kubeoperav1alpha1.AppPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	type published struct {
		port     int32
		protocol corev1.Protocol
	}
	seen := map[published]bool{}
	for i, port := range ports {
		key := published{servicePort(port), protocol(port)}
		if seen[key] {
			errs = append(errs, field.Duplicate(p.Index(i), fmt.Sprintf("Service port %d/%s", key.port, key.protocol)))
		}
		seen[key] = true
	}
	return errs
}

func validateEnv(app *kubeoperav1alpha1.KubeOperaApp, e corev1.EnvVar, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case e.Name == "":
		errs = append(errs, field.Required(p.Child("name"), ""))
	case strings.ContainsFunc(e.Name, func(r rune) bool { return r < ' ' || r > '~' || r == '=' }):
		errs = append(errs, field.Invalid(p.Child("name"), e.Name, "must consist only of printable ASCII characters other than '='"))
	}
	if e.ValueFrom == nil {
		return errs
	}
	if ref := e.ValueFrom.FieldRef; ref != nil {
		fp := p.Child("valueFrom", "fieldRef")
		if ref.APIVersion != "" && ref.APIVersion != "v1" {
			errs = append(errs, field.NotSupported(fp.Child("apiVersion"), ref.APIVersion, []string{"v1"}))
		}
		if msg := envFieldPathError(ref.FieldPath); msg != "" {
			errs = append(errs, field.Invalid(fp.Child("fieldPath"), ref.FieldPath, msg))
		}
	}
	if ref := e.ValueFrom.ResourceFieldRef; ref != nil {
		fp := p.Child("valueFrom", "resourceFieldRef")
		if ref.ContainerName != "" && ref.ContainerName != app.Name {
			errs = append(errs, field.Invalid(fp.Child("containerName"), ref.ContainerName, fmt.Sprintf("must be empty or %q, the app's only container", app.Name)))
		}
		if !validResourceFieldRef(ref.Resource) {
			errs = append(errs, field.NotSupported(fp.Child("resource"), ref.Resource, envResourceFields))
		}
		if !ref.Divisor.IsZero() && !validDivisor(ref.Resource, ref.Divisor) {
			errs = append(errs, field.Invalid(fp.Child("divisor"), ref.Divisor.String(), "not a divisor the API server accepts for "+ref.Resource))
		}
	}
	return errs
}

// envFieldPaths are the pod fields the kubelet exposes to environment variables.
var envFieldPaths = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"}

// envFieldPathError is why fieldPath cannot feed an environment variable, or "".
func envFieldPathError(fieldPath string) string {
	if slices.Contains(envFieldPaths, fieldPath) {
		return ""
	}
	for _, prefix := range []string{"metadata.labels", "metadata.annotations"} {
		rest, ok := strings.CutPrefix(fieldPath, prefix+"['")
		if !ok {
			continue
		}
		key, ok := strings.CutSuffix(rest, "']")
		if !ok {
			break
		}
		if prefix == "metadata.annotations" {
			key = strings.ToLower(key)
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return "invalid key: " + strings.Join(msgs, "; ")
		}
		return ""
	}
	return "must be one of " + strings.Join(envFieldPaths, ", ") + ", metadata.labels['<key>'] or metadata.annotations['<key>']"
}

var envResourceFields = []string{"limits.cpu", "limits.memory", "limits.ephemeral-storage", "limits.hugepages-<size>",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage", "requests.hugepages-<size>"}

func validResourceFieldRef(r string) bool {
	switch r {
	case "limits.cpu", "limits.memory", "limits.ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage":
		return true
	}
	for _, prefix := range []string{"limits.hugepages-", "requests.hugepages-"} {
		if strings.HasPrefix(r, prefix) {
			return true
		}
	}
	return false
}

// validDivisor: cpu divisors are 1m or 1; memory and storage divisors 1 or a power of 1000 or
// 1024 up to the exa/exbi units.
func validDivisor(r string, d resource.Quantity) bool {
	allowed := []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
	if strings.HasSuffix(r, ".cpu") {
		allowed = []string{"1m", "1"}
	}
	for _, a := range allowed {
		if d.Cmp(resource.MustParse(a)) == 0 {
			return true
		}
	}
	return false
}

const hugePagesPrefix = "hugepages-"

// validateResources mirrors the container resource requirements validation. Names themselves
// are refused at admission (a CEL rule on the map keys fits the budget).
func validateResources(rr corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	var cpuOrMemory, hugePages bool
	check := func(kind string, name corev1.ResourceName, q resource.Quantity) {
		kp := p.Child(kind).Key(string(name))
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(kp, q.String(), "must be greater than or equal to 0"))
		}
		switch {
		case name == corev1.ResourceCPU || name == corev1.ResourceMemory:
			cpuOrMemory = true
		case strings.HasPrefix(string(name), hugePagesPrefix):
			hugePages = true
			if msg := hugePageValueError(name, q); msg != "" {
				errs = append(errs, field.Invalid(kp, q.String(), msg))
			}
		case extendedResource(name):
			if q.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(kp, q.String(), "must be an integer"))
			}
		}
	}
	for _, name := range sortedNames(rr.Limits) {
		check("limits", name, rr.Limits[name])
	}
	for _, name := range sortedNames(rr.Requests) {
		q := rr.Requests[name]
		check("requests", name, q)
		limit, hasLimit := rr.Limits[name]
		overcommit := !strings.HasPrefix(string(name), hugePagesPrefix) && !extendedResource(name)
		switch {
		case hasLimit && !overcommit && q.Cmp(limit) != 0:
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case hasLimit && q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !hasLimit && !overcommit:
			errs = append(errs, field.Required(p.Child("limits").Key(string(name)), "a limit must be set for hugepages and extended resources"))
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(p, "hugepages require a cpu or memory request or limit"))
	}
	if len(rr.Claims) > 0 {
		errs = append(errs, field.Forbidden(p.Child("claims"), "the app's pod declares no resource claims"))
	}
	return errs
}

// extendedResource: a domain-qualified name outside kubernetes.io (the admission rule on the
// names leaves no other kind of qualified name).
func extendedResource(name corev1.ResourceName) bool {
	return strings.Contains(string(name), "/") && !strings.HasPrefix(string(name), "kubernetes.io/")
}

// hugePageValueError: the page size must parse and be positive, the quantity a multiple of it.
func hugePageValueError(name corev1.ResourceName, q resource.Quantity) string {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), hugePagesPrefix))
	if err != nil || size.Sign() <= 0 {
		return fmt.Sprintf("%s does not name a page size", name)
	}
	if q.Value()%size.Value() != 0 {
		return fmt.Sprintf("must be a multiple of the page size %s", size.String())
	}
	return ""
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(l))
}
