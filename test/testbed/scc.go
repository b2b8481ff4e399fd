package testbed

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// OpenShift's SCC admission for the two SecurityContextConstraints a namespace's pods meet: the
// default, restricted-v2, and nonroot-v2, which OpenShift grants to whom a RoleBinding to its
// ClusterRole system:openshift:scc:nonroot-v2 names. OpenShift's admission library is not served
// by the Go module proxy, so this file writes the rules down from their sources (docs/testbed.md
// lists them with file and function):
//
//   - the manifests: openshift/cluster-kube-apiserver-operator, bindata/bootkube/scc-manifests/
//     0000_20_kube-apiserver-operator_00_scc-restricted-v2.yaml and ..._00_scc-nonroot-v2.yaml;
//   - defaulting and validation: openshift/apiserver-library-go, pkg/securitycontextconstraints
//     (sccmatching/provider.go CreatePodSecurityContext, CreateContainerSecurityContext,
//     ValidatePodSecurityContext, ValidateContainerSecurityContext, and the strategies
//     user/mustrunasrange.go, user/nonroot.go, group/mustrunas.go, group/runasany.go,
//     selinux/mustrunas.go, seccomp/strategy.go, capabilities/mustrunas.go);
//   - the order the SCCs are tried in and who may use one: sccadmission/admission.go
//     (computeSecurityContext), sccmatching/matcher.go (ConstraintAppliesTo) and
//     util/sort/byrestrictions.go (ByPriority); webhook.go plays that part;
//   - the namespace's ranges: openshift/cluster-policy-controller,
//     pkg/security/controller/namespace_scc_allocation_controller.go (allocate).
//
// What is left out: the other SCCs OpenShift ships (anyuid, privileged, hostnetwork-v2, ...),
// which the real admission also tries and lists as "not usable" in a refusal, and an SCC's own
// users and groups lists (empty for both modelled here: who may use them is RBAC's answer).

// The namespace annotations of the SCC ranges (openshift/api security/v1 consts.go).
const (
	AnnotationUIDRange           = "openshift.io/sa.scc.uid-range"
	AnnotationSupplementalGroups = "openshift.io/sa.scc.supplemental-groups"
	AnnotationMCS                = "openshift.io/sa.scc.mcs"
	// AnnotationValidatedSCC is set on every admitted pod to the SCC that admitted it.
	AnnotationValidatedSCC = "openshift.io/scc"
)

// seccompPodAnnotation is the pod-level seccomp annotation the seccomp strategy sets beside the
// field.
const seccompPodAnnotation = "seccomp.security.alpha.kubernetes.io/pod"

// The strategies of an SCC's fsGroup and runAsUser, named as in its manifest.
const (
	// fsGroupMustRunAs: the namespace's group, defaulted and required (group/mustrunas.go).
	fsGroupMustRunAs = "MustRunAs"
	// fsGroupRunAsAny: no default, no check (group/runasany.go).
	fsGroupRunAsAny = "RunAsAny"
	// runAsUserMustRunAsRange: a UID of the namespace's range, its first one by default
	// (user/mustrunasrange.go).
	runAsUserMustRunAsRange = "MustRunAsRange"
	// runAsUserMustRunAsNonRoot: any UID but 0, none generated (user/nonroot.go).
	runAsUserMustRunAsNonRoot = "MustRunAsNonRoot"
)

// scc is one SecurityContextConstraints where restricted-v2 and nonroot-v2 differ: the volume
// types it allows and its fsGroup and runAsUser strategies. What both manifests set alike
// (seLinuxContext MustRunAs the namespace's level, seccompProfiles [runtime/default],
// requiredDropCapabilities [ALL], allowedCapabilities [NET_BIND_SERVICE], no privileged
// containers or privilege escalation, no host network, PID, IPC or ports, supplementalGroups
// RunAsAny) defaults and validate apply once for both, as the one provider implementation
// (sccmatching/provider.go) does for every SCC.
type scc struct {
	name      string
	volumes   []string
	fsGroup   string
	runAsUser string
}

// The two SCCs, in the order the admission tries them: neither sets a priority, and
// restricted-v2 scores as the more restrictive (its UIDs come from a range), so ByPriority puts
// it first.
var (
	restrictedV2 = scc{
		name: "restricted-v2",
		volumes: []string{
			"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret",
		},
		fsGroup:   fsGroupMustRunAs,
		runAsUser: runAsUserMustRunAsRange,
	}
	nonrootV2 = scc{
		name: "nonroot-v2",
		volumes: []string{
			"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
		},
		fsGroup:   fsGroupRunAsAny,
		runAsUser: runAsUserMustRunAsNonRoot,
	}
	sccs = []scc{restrictedV2, nonrootV2}
)

// sccRanges are what the namespace annotations allocate: the UIDs a container may run as, the one
// fsGroup a pod may have, and the SELinux level.
type sccRanges struct {
	uidMin, uidMax int64
	fsGroup        int64
	mcs            string
}

// errNoRanges is a namespace the allocation controller has not annotated yet.
var errNoRanges = errors.New("unable to find annotation")

// parseRanges reads the namespace's annotations as the SCC strategies do: the UID range from
// uid-range, the fsGroup from the first block of supplemental-groups (uid-range when that is
// missing), the level from mcs.
func parseRanges(annotations map[string]string) (sccRanges, error) {
	uid, ok := annotations[AnnotationUIDRange]
	if !ok {
		return sccRanges{}, fmt.Errorf("%w %s", errNoRanges, AnnotationUIDRange)
	}
	mcs, ok := annotations[AnnotationMCS]
	if !ok {
		return sccRanges{}, fmt.Errorf("%w %s", errNoRanges, AnnotationMCS)
	}
	lo, hi, err := parseBlock(uid)
	if err != nil {
		return sccRanges{}, fmt.Errorf("%s: %w", AnnotationUIDRange, err)
	}
	groups := uid
	if g, ok := annotations[AnnotationSupplementalGroups]; ok {
		groups = g
	}
	// The first block of a comma-separated list; its start is the only allowed fsGroup.
	first, _, _ := strings.Cut(groups, ",")
	gid, _, err := parseBlock(first)
	if err != nil {
		return sccRanges{}, fmt.Errorf("%s: %w", AnnotationSupplementalGroups, err)
	}
	return sccRanges{uidMin: lo, uidMax: hi, fsGroup: gid, mcs: mcs}, nil
}

// parseBlock reads "start/size" or "start-end" (library-go's uid.ParseBlock).
func parseBlock(s string) (lo, hi int64, err error) {
	if a, n, ok := strings.Cut(s, "/"); ok {
		lo, err1 := strconv.ParseInt(a, 10, 64)
		size, err2 := strconv.ParseInt(n, 10, 64)
		if err := errors.Join(err1, err2); err != nil || size < 1 {
			return 0, 0, fmt.Errorf("invalid block %q", s)
		}
		return lo, lo + size - 1, nil
	}
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, err1 := strconv.ParseInt(a, 10, 64)
		hi, err2 := strconv.ParseInt(b, 10, 64)
		if err := errors.Join(err1, err2); err != nil || hi < lo {
			return 0, 0, fmt.Errorf("invalid block %q", s)
		}
		return lo, hi, nil
	}
	return 0, 0, fmt.Errorf("invalid block %q", s)
}

// defaults fills what the SCC admission fills in a pod it admits under s, only where the pod
// leaves a field unset: the pod's SELinux level and RuntimeDefault seccomp profile, and its
// fsGroup under MustRunAs; each container's runAsUser under MustRunAsRange (the range's first
// UID, unless the pod sets one), runAsNonRoot, allowPrivilegeEscalation false and a drop of ALL
// capabilities.
func (s scc) defaults(r sccRanges, pod *corev1.Pod) {
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := pod.Spec.SecurityContext
	if s.fsGroup == fsGroupMustRunAs && psc.FSGroup == nil {
		psc.FSGroup = new(r.fsGroup)
	}
	if psc.SELinuxOptions == nil {
		psc.SELinuxOptions = &corev1.SELinuxOptions{Level: r.mcs}
	}
	if _, annotated := pod.Annotations[seccompPodAnnotation]; psc.SeccompProfile == nil && !annotated {
		psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[seccompPodAnnotation] = "runtime/default"
	}
	visitContainers(pod, func(c *corev1.SecurityContext) *corev1.SecurityContext {
		if c == nil {
			c = &corev1.SecurityContext{}
		}
		if s.runAsUser == runAsUserMustRunAsRange && c.RunAsUser == nil && psc.RunAsUser == nil {
			c.RunAsUser = new(r.uidMin)
		}
		// Where neither the container nor the pod says, runAsNonRoot is true for a UID above 0
		// and, under MustRunAsNonRoot, for no UID at all, which makes the kubelet refuse an image
		// whose user is root.
		if effective(c.RunAsNonRoot, psc.RunAsNonRoot) == nil {
			switch uid := effective(c.RunAsUser, psc.RunAsUser); {
			case uid == nil && s.runAsUser == runAsUserMustRunAsNonRoot, uid != nil && *uid > 0:
				c.RunAsNonRoot = new(true)
			}
		}
		if c.Capabilities == nil {
			c.Capabilities = &corev1.Capabilities{}
		}
		if !slices.Contains(c.Capabilities.Drop, "ALL") {
			c.Capabilities.Drop = append(c.Capabilities.Drop, "ALL")
		}
		if c.AllowPrivilegeEscalation == nil {
			c.AllowPrivilegeEscalation = new(false)
		}
		return c
	})
}

// validate lists what s refuses in a (defaulted) pod, each in the words of the SCC admission's
// field errors.
func (s scc) validate(r sccRanges, pod *corev1.Pod) []string {
	var errs []string
	provider := "provider " + s.name + ": "
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if s.fsGroup == fsGroupMustRunAs && (psc.FSGroup == nil || *psc.FSGroup != r.fsGroup) {
		v := "nil"
		if psc.FSGroup != nil {
			v = fmt.Sprintf("[]int64{%d}", *psc.FSGroup)
		}
		errs = append(errs, fmt.Sprintf("%s.spec.securityContext.fsGroup: Invalid value: %s: %s is not an allowed group", provider, v, strings.Trim(v, "[]int64{}")))
	}
	if l := psc.SELinuxOptions; l != nil && !levelEqual(l.Level, r.mcs) {
		errs = append(errs, fmt.Sprintf("%s.spec.securityContext.seLinuxOptions.level: Invalid value: %q: must be %s", provider, l.Level, r.mcs))
	}
	if p := psc.SeccompProfile; p != nil && p.Type != corev1.SeccompProfileTypeRuntimeDefault {
		errs = append(errs, fmt.Sprintf("pod.spec.securityContext.seccompProfile: Forbidden: %s is not an allowed seccomp profile. Valid values are [runtime/default]", seccompName(p)))
	}
	for _, host := range []struct {
		on   bool
		name string
		what string
	}{{pod.Spec.HostNetwork, "hostNetwork", "Host network"}, {pod.Spec.HostPID, "hostPID", "Host PID"}, {pod.Spec.HostIPC, "hostIPC", "Host IPC"}} {
		if host.on {
			errs = append(errs, fmt.Sprintf("%s.spec.securityContext.%s: Invalid value: true: %s is not allowed to be used", provider, host.name, host.what))
		}
	}
	for i, v := range pod.Spec.Volumes {
		if t := volumeType(v); !slices.Contains(s.volumes, t) {
			errs = append(errs, fmt.Sprintf("spec.volumes[%d]: Invalid value: %q: %s volumes are not allowed to be used", i, t, t))
		}
	}
	for _, c := range allContainers(pod) {
		sc := c.sc
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		path := provider + c.path
		errs = append(errs, s.validateUser(r, path, effective(sc.RunAsUser, psc.RunAsUser), effective(sc.RunAsNonRoot, psc.RunAsNonRoot))...)
		if l := sc.SELinuxOptions; l != nil && !levelEqual(l.Level, r.mcs) {
			errs = append(errs, fmt.Sprintf("%s.seLinuxOptions.level: Invalid value: %q: must be %s", path, l.Level, r.mcs))
		}
		if p := sc.SeccompProfile; p != nil && p.Type != corev1.SeccompProfileTypeRuntimeDefault {
			errs = append(errs, fmt.Sprintf("pod.spec.containers[%s].securityContext.seccompProfile: Forbidden: %s is not an allowed seccomp profile. Valid values are [runtime/default]", c.name, seccompName(p)))
		}
		if sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, path+".privileged: Invalid value: true: Privileged containers are not allowed")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			errs = append(errs, path+".allowPrivilegeEscalation: Invalid value: true: Allowing privilege escalation for containers is not allowed")
		}
		if caps := sc.Capabilities; caps == nil || !slices.Contains(caps.Drop, "ALL") {
			errs = append(errs, path+".capabilities.drop: Invalid value: ALL is required to be dropped but was not found")
		}
		if caps := sc.Capabilities; caps != nil {
			for _, add := range caps.Add {
				if add != "NET_BIND_SERVICE" {
					errs = append(errs, fmt.Sprintf("%s.capabilities.add: Invalid value: %q: capability may not be added", path, add))
				}
			}
		}
		for _, p := range c.ports {
			if p.HostPort > 0 {
				errs = append(errs, fmt.Sprintf("%s.hostPort: Invalid value: %d: Host ports are not allowed to be used", path, p.HostPort))
			}
		}
	}
	return errs
}

// validateUser lists what s's runAsUser strategy refuses in a container's effective runAsUser
// and runAsNonRoot (the container's, else the pod's).
func (s scc) validateUser(r sccRanges, path string, uid *int64, nonRoot *bool) []string {
	if s.runAsUser == runAsUserMustRunAsRange {
		switch {
		case uid == nil:
			return []string{path + ".runAsUser: Required value"}
		case *uid < r.uidMin || *uid > r.uidMax:
			return []string{fmt.Sprintf("%s.runAsUser: Invalid value: %d: must be in the ranges: [%d, %d]", path, *uid, r.uidMin, r.uidMax)}
		}
		return nil
	}
	// MustRunAsNonRoot accepts no UID at all (the image's user, which the kubelet checks) as long
	// as runAsNonRoot says so, and any UID but root's.
	switch {
	case uid == nil && nonRoot == nil:
		return []string{path + ".runAsNonRoot: Required value: must be true"}
	case nonRoot != nil && !*nonRoot:
		return []string{path + ".runAsNonRoot: Invalid value: false: must be true"}
	case uid != nil && *uid == 0:
		return []string{path + ".runAsUser: Invalid value: 0: running with the root UID is forbidden"}
	}
	return nil
}

// notUsable is the SCC admission's entry for an SCC that neither the pod's creator nor its
// ServiceAccount may use.
func notUsable(name string) string {
	return fmt.Sprintf("provider %q: Forbidden: not usable by user or serviceaccount", name)
}

// refusal is the SCC admission's message for a pod no SCC validates: every SCC's errors, in the
// order the SCCs were tried.
func refusal(errs []string) string {
	list := slices.Compact(errs)
	if len(list) == 1 {
		return "unable to validate against any security context constraint: " + list[0]
	}
	return "unable to validate against any security context constraint: [" + strings.Join(list, ", ") + "]"
}

// container is one container of a pod with its path in the SCC messages.
type container struct {
	name, path string
	sc         *corev1.SecurityContext
	ports      []corev1.ContainerPort
}

func allContainers(pod *corev1.Pod) []container {
	var out []container
	for i, c := range pod.Spec.InitContainers {
		out = append(out, container{c.Name, fmt.Sprintf(".initContainers[%d]", i), c.SecurityContext, c.Ports})
	}
	for i, c := range pod.Spec.Containers {
		out = append(out, container{c.Name, fmt.Sprintf(".containers[%d]", i), c.SecurityContext, c.Ports})
	}
	for i, c := range pod.Spec.EphemeralContainers {
		out = append(out, container{c.Name, fmt.Sprintf(".ephemeralContainers[%d]", i), c.SecurityContext, c.Ports})
	}
	return out
}

// visitContainers replaces every container's security context with fn's result.
func visitContainers(pod *corev1.Pod, fn func(*corev1.SecurityContext) *corev1.SecurityContext) {
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].SecurityContext = fn(pod.Spec.InitContainers[i].SecurityContext)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].SecurityContext = fn(pod.Spec.Containers[i].SecurityContext)
	}
	for i := range pod.Spec.EphemeralContainers {
		pod.Spec.EphemeralContainers[i].SecurityContext = fn(pod.Spec.EphemeralContainers[i].SecurityContext)
	}
}

// effective is the container's value, else the pod's.
func effective[T any](container, pod *T) *T {
	if container != nil {
		return container
	}
	return pod
}

// levelEqual compares SELinux levels as the selinux strategy does: the same sensitivity and the
// same set of categories, in any order.
func levelEqual(a, b string) bool {
	sa, ca, _ := strings.Cut(a, ":")
	sb, cb, _ := strings.Cut(b, ":")
	if sa != sb {
		return false
	}
	la, lb := strings.Split(ca, ","), strings.Split(cb, ",")
	slices.Sort(la)
	slices.Sort(lb)
	return slices.Equal(la, lb)
}

func seccompName(p *corev1.SeccompProfile) string {
	switch p.Type {
	case corev1.SeccompProfileTypeUnconfined:
		return "unconfined"
	case corev1.SeccompProfileTypeLocalhost:
		if p.LocalhostProfile != nil {
			return "localhost/" + *p.LocalhostProfile
		}
		return "localhost/"
	default:
		return "runtime/default"
	}
}

// volumeType is the SCC name of a volume's source (sccutil.GetVolumeFSType).
func volumeType(v corev1.Volume) string {
	s := v.VolumeSource
	for _, t := range []struct {
		set  bool
		name string
	}{
		{s.HostPath != nil, "hostPath"}, {s.EmptyDir != nil, "emptyDir"}, {s.Secret != nil, "secret"},
		{s.ConfigMap != nil, "configMap"}, {s.PersistentVolumeClaim != nil, "persistentVolumeClaim"},
		{s.Projected != nil, "projected"}, {s.DownwardAPI != nil, "downwardAPI"}, {s.CSI != nil, "csi"},
		{s.Ephemeral != nil, "ephemeral"}, {s.Image != nil, "image"}, {s.NFS != nil, "nfs"},
		{s.ISCSI != nil, "iscsi"}, {s.FC != nil, "fc"},
	} {
		if t.set {
			return t.name
		}
	}
	return "other"
}
