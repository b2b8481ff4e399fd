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
	restrictedV2.defaults(r, pod)
	if errs := restrictedV2.validate(r, pod); len(errs) > 0 {
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
	restrictedV2.defaults(r, pod)
	if sc := pod.Spec.Containers[0].SecurityContext; sc.RunAsUser != nil || sc.RunAsNonRoot != nil {
		t.Errorf("the container got its own user although the pod sets one: %+v", sc)
	}
	if errs := restrictedV2.validate(r, pod); len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
}

// refusalCase is a change to a bare pod and a part of the refusal it must draw.
type refusalCase struct {
	name string
	edit func(*corev1.Pod)
	want string
}

// sharedRefusals are what restricted-v2 and nonroot-v2 both refuse: their manifests agree on
// these rules.
var sharedRefusals = []refusalCase{
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

// testRefusals defaults each case's pod under s and checks that s then refuses it as the case
// says, in a refusal message of the admission's form.
func testRefusals(t *testing.T, s scc, cases []refusalCase) {
	r := mustRanges(t, testRanges)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := bareSCCPod()
			tc.edit(pod)
			s.defaults(r, pod)
			errs := s.validate(r, pod)
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

func TestRestrictedV2Refusals(t *testing.T) {
	testRefusals(t, restrictedV2, append([]refusalCase{
		{"a fixed UID outside the namespace's range", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64(10000))}
		}, "provider restricted-v2: .containers[0].runAsUser: Invalid value: 10000: must be in the ranges: [1000680000, 1000689999]"},
		{"a fixed fsGroup", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: new(int64(10000))}
		}, "provider restricted-v2: .spec.securityContext.fsGroup: Invalid value: []int64{10000}: 10000 is not an allowed group"},
		{"root", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(0))}
		}, ".containers[0].runAsUser: Invalid value: 0: must be in the ranges"},
	}, sharedRefusals...))
}

func TestNonrootV2Refusals(t *testing.T) {
	testRefusals(t, nonrootV2, append([]refusalCase{
		{"root", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: new(int64(0))}
		}, "provider nonroot-v2: .containers[0].runAsUser: Invalid value: 0: running with the root UID is forbidden"},
		{"root with runAsNonRoot", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64(0)), RunAsNonRoot: new(true)}
		}, "provider nonroot-v2: .containers[0].runAsUser: Invalid value: 0: running with the root UID is forbidden"},
		{"runAsNonRoot false", func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: new(int64(10000)), RunAsNonRoot: new(false)}
		}, "provider nonroot-v2: .containers[0].runAsNonRoot: Invalid value: false: must be true"},
		{"an image volume (restricted-v2 allows it)", func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "i", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.invalid/data:1"}}})
		}, `spec.volumes[1]: Invalid value: "image": image volumes are not allowed to be used`},
	}, sharedRefusals...))
}

// imageUserPod runs as UID, group and fsGroup 10000, the user of images that keep their files
// in that user's home directory.
func imageUserPod(nonRoot *bool) *corev1.Pod {
	pod := bareSCCPod()
	id := int64(10000)
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &id, RunAsGroup: &id, FSGroup: &id, RunAsNonRoot: nonRoot}
	return pod
}

func TestNonrootV2AdmitsAFixedNonRootUIDThatRestrictedV2Refuses(t *testing.T) {
	r := mustRanges(t, testRanges)
	for _, nonRoot := range []*bool{new(true), nil} {
		pod := imageUserPod(nonRoot)
		nonrootV2.defaults(r, pod)
		if errs := nonrootV2.validate(r, pod); len(errs) > 0 {
			t.Fatalf("runAsNonRoot %v: refused: %v", nonRoot, errs)
		}
		psc, sc := pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext
		// RunAsAny keeps the pod's fsGroup; MustRunAsNonRoot generates no UID of its own.
		if *psc.FSGroup != 10000 || *psc.RunAsUser != 10000 || sc.RunAsUser != nil {
			t.Errorf("runAsNonRoot %v: pod security context = %+v, container's = %+v", nonRoot, psc, sc)
		}
		if nonRoot == nil && (sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot) {
			t.Errorf("a UID above 0 without runAsNonRoot: the container's runAsNonRoot = %v, want true", sc.RunAsNonRoot)
		}

		pod = imageUserPod(nonRoot)
		restrictedV2.defaults(r, pod)
		msg := refusal(restrictedV2.validate(r, pod))
		for _, want := range []string{
			"provider restricted-v2: .containers[0].runAsUser: Invalid value: 10000: must be in the ranges: [1000680000, 1000689999]",
			"provider restricted-v2: .spec.securityContext.fsGroup: Invalid value: []int64{10000}: 10000 is not an allowed group",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("runAsNonRoot %v: restricted-v2's refusal = %q, want it to contain %q", nonRoot, msg, want)
			}
		}
	}
}

func TestNonrootV2WithoutAUIDRequiresRunAsNonRootAndDefaultsIt(t *testing.T) {
	r := mustRanges(t, testRanges)
	// The rule: neither a UID nor runAsNonRoot leaves the image's user unchecked.
	msg := refusal(nonrootV2.validate(r, bareSCCPod()))
	if want := "provider nonroot-v2: .containers[0].runAsNonRoot: Required value: must be true"; !strings.Contains(msg, want) {
		t.Fatalf("refusal = %q, want it to contain %q", msg, want)
	}
	// The admission never meets it: defaulting sets runAsNonRoot where it generates no UID.
	pod := bareSCCPod()
	nonrootV2.defaults(r, pod)
	if errs := nonrootV2.validate(r, pod); len(errs) > 0 {
		t.Fatalf("a defaulted bare pod is refused: %v", errs)
	}
	psc, sc := pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext
	if sc.RunAsUser != nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context = %+v", sc)
	}
	if psc.FSGroup != nil || psc.SELinuxOptions.Level != "s0:c26,c5" || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context = %+v", psc)
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
	restrictedV2.defaults(r, pod)
	if errs := restrictedV2.validate(r, pod); len(errs) > 0 {
		t.Fatalf("refused: %v", errs)
	}
}
