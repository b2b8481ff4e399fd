package testbed

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// OpenShift's restricted-v2 SecurityContextConstraints, as its SCC admission plugin applies it to
// a pod. OpenShift's admission library is not served by the Go module proxy, so this file writes
// the rules down from their sources (docs/testbed.md lists them with file and function):
//
//   - the manifest: openshift/cluster-kube-apiserver-operator,
//     bindata/bootkube/scc-manifests/0000_20_kube-apiserver-operator_00_scc-restricted-v2.yaml;
//   - defaulting and validation: openshift/apiserver-library-go, pkg/securitycontextconstraints
//     (sccmatching/provider.go CreatePodSecurityContext, CreateContainerSecurityContext,
//     ValidatePodSecurityContext, ValidateContainerSecurityContext, and the strategies
//     user/mustrunasrange.go, group/mustrunas.go, selinux/mustrunas.go, seccomp/strategy.go,
//     capabilities/mustrunas.go);
//   - the namespace's ranges: openshift/cluster-policy-controller,
//     pkg/security/controller/namespace_scc_allocation_controller.go (allocate).
//
// What is left out: the other SCCs and who may use them. A namespace's ServiceAccounts may use
// restricted-v2 only, which is what a namespace gets by default.

// The namespace annotations of the SCC ranges (openshift/api security/v1 consts.go).
const (
	AnnotationUIDRange           = "openshift.io/sa.scc.uid-range"
	AnnotationSupplementalGroups = "openshift.io/sa.scc.supplemental-groups"
	AnnotationMCS                = "openshift.io/sa.scc.mcs"
	// AnnotationValidatedSCC is set on every admitted pod to the SCC that admitted it.
	AnnotationValidatedSCC = "openshift.io/scc"
)

// restrictedV2 is the SCC's name, as it appears in the admission messages.
const restrictedV2 = "restricted-v2"

// seccompPodAnnotation is the pod-level seccomp annotation the seccomp strategy sets beside the
// field.
const seccompPodAnnotation = "seccomp.security.alpha.kubernetes.io/pod"

// restrictedV2Volumes are the volume types restricted-v2 allows.
var restrictedV2Volumes = []string{
	"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret",
}

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

// defaultRestrictedV2 fills what the SCC admission fills in a pod it admits under restricted-v2,
// only where the pod leaves a field unset: the pod's fsGroup, SELinux level and RuntimeDefault
// seccomp profile; each container's runAsUser (the range's first UID, unless the pod sets one),
// runAsNonRoot, allowPrivilegeEscalation false and a drop of ALL capabilities.
func defaultRestrictedV2(r sccRanges, pod *corev1.Pod) {
	if pod.Spec.SecurityContext == nil {
		pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := pod.Spec.SecurityContext
	if psc.FSGroup == nil {
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
		if c.RunAsUser == nil && psc.RunAsUser == nil {
			c.RunAsUser = new(r.uidMin)
		}
		uid := effective(c.RunAsUser, psc.RunAsUser)
		if effective(c.RunAsNonRoot, psc.RunAsNonRoot) == nil && uid != nil && *uid > 0 {
			c.RunAsNonRoot = new(true)
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

// validateRestrictedV2 lists what restricted-v2 refuses in a (defaulted) pod, each in the words of
// the SCC admission's field errors.
func validateRestrictedV2(r sccRanges, pod *corev1.Pod) []string {
	var errs []string
	provider := "provider " + restrictedV2 + ": "
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if psc.FSGroup == nil || *psc.FSGroup != r.fsGroup {
		v := "nil"
		if psc.FSGroup != nil {
			v = fmt.Sprintf("[]int64{%d}", *psc.FSGroup)
		}
		errs = append(errs, fmt.Sprintf("%s.spec.securityContext.fsGroup: Invalid value: %s: %s is not an allowed group", provider, v, strings.Trim(v, "[]int64{}")))
	}
	if s := psc.SELinuxOptions; s != nil && !levelEqual(s.Level, r.mcs) {
		errs = append(errs, fmt.Sprintf("%s.spec.securityContext.seLinuxOptions.level: Invalid value: %q: must be %s", provider, s.Level, r.mcs))
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
		if t := volumeType(v); !slices.Contains(restrictedV2Volumes, t) {
			errs = append(errs, fmt.Sprintf("spec.volumes[%d]: Invalid value: %q: %s volumes are not allowed to be used", i, t, t))
		}
	}
	for _, c := range allContainers(pod) {
		sc := c.sc
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		path := provider + c.path
		switch uid := effective(sc.RunAsUser, psc.RunAsUser); {
		case uid == nil:
			errs = append(errs, path+".runAsUser: Required value")
		case *uid < r.uidMin || *uid > r.uidMax:
			errs = append(errs, fmt.Sprintf("%s.runAsUser: Invalid value: %d: must be in the ranges: [%d, %d]", path, *uid, r.uidMin, r.uidMax))
		}
		if s := sc.SELinuxOptions; s != nil && !levelEqual(s.Level, r.mcs) {
			errs = append(errs, fmt.Sprintf("%s.seLinuxOptions.level: Invalid value: %q: must be %s", path, s.Level, r.mcs))
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

// refusal is the SCC admission's message for a pod no SCC validates.
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
