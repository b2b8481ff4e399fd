package testbed

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

var testRanges = map[string]string{
	AnnotationUIDRange:           "1000680000/10000",
	AnnotationSupplementalGroups: "1000680000/10000",
	AnnotationMCS:                "s0:c26,c5",
}

func bareSCCPod() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "app"}},
		Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
}

func mustRanges(t *testing.T, a map[string]string) sccRanges {
	t.Helper()
	r, err := parseRanges(a)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRangesAsTheSCCStrategies(t *testing.T) {
	r := mustRanges(t, testRanges)
	if r.uidMin != 1000680000 || r.uidMax != 1000689999 || r.fsGroup != 1000680000 || r.mcs != "s0:c26,c5" {
		t.Fatalf("ranges = %+v", r)
	}
	// fsGroup: the first block of supplemental-groups, uid-range when that is missing.
	r = mustRanges(t, map[string]string{AnnotationUIDRange: "2000-2999", AnnotationMCS: "s0:c1,c2"})
	if r.uidMin != 2000 || r.uidMax != 2999 || r.fsGroup != 2000 {
		t.Fatalf("ranges = %+v", r)
	}
	r = mustRanges(t, map[string]string{AnnotationUIDRange: "2000/10", AnnotationSupplementalGroups: "5000/10,6000/10", AnnotationMCS: "s0:c1,c2"})
	if r.fsGroup != 5000 {
		t.Fatalf("fsGroup = %d, want the first block's start 5000", r.fsGroup)
	}
	for _, bad := range []map[string]string{
		{AnnotationMCS: "s0:c1,c2"},
		{AnnotationUIDRange: "1/10"},
		{AnnotationUIDRange: "x/10", AnnotationMCS: "s0:c1,c2"},
		{AnnotationUIDRange: "10/0", AnnotationMCS: "s0:c1,c2"},
		{AnnotationUIDRange: "20-10", AnnotationMCS: "s0:c1,c2"},
	} {
		if _, err := parseRanges(bad); err == nil {
			t.Errorf("parseRanges(%v) accepted", bad)
		}
	}
}

func TestRestrictedV2DefaultsABarePodAndAdmitsIt(t *testing.T) {
	r := mustRanges(t, testRanges)
	pod := bareSCCPod()
	defaultRestrictedV2(r, pod)
	if errs := validateRestrictedV2(r, pod); len(errs) > 0 {
		t.Fatalf("a defaulted bare pod is refused: %v", errs)
	}
	psc := pod.Spec.SecurityContext
	if *psc.FSGroup != 1000680000 || psc.SELinuxOptions.Level != "s0:c26,c5" || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context = %+v", psc)
	}
	if pod.Annotations[seccompPodAnnotation] != "runtime/default" {
		t.Errorf("annotations = %v", pod.Annotations)
	}
	sc := pod.Spec.Containers[0].SecurityContext
	if *sc.RunAsUser != 1000680000 || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context = %+v", sc)
	}
}

func TestRestrictedV2KeepsWhatThePodSets(t *testing.T) {
	r := mustRanges(t, testRanges)
	pod := bareSCCPod()
	uid := int64(1000680042)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsNonRoot: new(true)}
	defaultRestrictedV2(r, pod)
	if sc := pod.Spec.Containers[0].SecurityContext; sc.RunAsUser != nil || sc.RunAsNonRoot != nil {
		t.Errorf("the container got its own user although the pod sets one: %+v", sc)
	}
	if errs := validateRestrictedV2(r, pod); len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
}

func TestRestrictedV2Refusals(t *testing.T) {
	r := mustRanges(t, testRanges)
	cases := []struct {
		name string
		edit func(*corev1.Pod)
		want string
	}{
		{"a fixed UID outside the namespace's range", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64(10000))}
		}, "provider restricted-v2: .containers[0].runAsUser: Invalid value: 10000: must be in the ranges: [1000680000, 1000689999]"},
		{"a fixed fsGroup", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: new(int64(10000))}
		}, "provider restricted-v2: .spec.securityContext.fsGroup: Invalid value: []int64{10000}: 10000 is not an allowed group"},
		{"root", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(0))}
		}, ".containers[0].runAsUser: Invalid value: 0: must be in the ranges"},
		{"a privileged container", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
		}, ".containers[0].privileged: Invalid value: true: Privileged containers are not allowed"},
		{"privilege escalation", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: new(true)}
		}, ".containers[0].allowPrivilegeEscalation: Invalid value: true: Allowing privilege escalation for containers is not allowed"},
		{"an added capability", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}, `.containers[0].capabilities.add: Invalid value: "NET_ADMIN": capability may not be added`},
		{"a hostPath volume", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, `spec.volumes[1]: Invalid value: "hostPath": hostPath volumes are not allowed to be used`},
		{"the host network", func(p *corev1.Pod) { p.Spec.HostNetwork = true }, ".spec.securityContext.hostNetwork: Invalid value: true: Host network is not allowed to be used"},
		{"a host port", func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}, ".containers[0].hostPort: Invalid value: 8080: Host ports are not allowed to be used"},
		{"an unconfined seccomp profile", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
		}, "unconfined is not an allowed seccomp profile"},
		{"another SELinux level", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1,c2"}}
		}, `.spec.securityContext.seLinuxOptions.level: Invalid value: "s0:c1,c2": must be s0:c26,c5`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := bareSCCPod()
			tc.edit(pod)
			defaultRestrictedV2(r, pod)
			errs := validateRestrictedV2(r, pod)
			msg := refusal(errs)
			if len(errs) == 0 || !strings.Contains(msg, tc.want) {
				t.Fatalf("refusal = %q, want it to contain %q", msg, tc.want)
			}
			if !strings.HasPrefix(msg, "unable to validate against any security context constraint: ") {
				t.Errorf("refusal = %q", msg)
			}
		})
	}
}

func TestRestrictedV2AllowsWhatItLists(t *testing.T) {
	r := mustRanges(t, testRanges)
	pod := bareSCCPod()
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c5,c26"}, // categories in another order
		RunAsGroup:     new(int64(0)),                              // runAsGroup is not checked by any SCC strategy
	}
	for _, v := range []corev1.VolumeSource{
		{ConfigMap: &corev1.ConfigMapVolumeSource{}}, {Secret: &corev1.SecretVolumeSource{}},
		{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}, {Projected: &corev1.ProjectedVolumeSource{}},
	} {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "v", VolumeSource: v})
	}
	defaultRestrictedV2(r, pod)
	if errs := validateRestrictedV2(r, pod); len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
}
