package controlplane

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func podWith(name string, st corev1.PodStatus) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: st}
}

func TestPodTroubleSaysWhatThePodsSay(t *testing.T) {
	waiting := func(reason, msg string, restarts int32) corev1.PodStatus {
		return corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
			Name: "router", RestartCount: restarts, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		}}}
	}
	unready := corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
		Name: "router", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}}
	unschedulable := corev1.PodStatus{Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/3 nodes are available: 3 Insufficient cpu.",
	}}}
	deleting := podWith("router-old", waiting("CrashLoopBackOff", "", 9))
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	cases := []struct {
		name    string
		pods    []corev1.Pod
		created string
		want    string
	}{
		{"no pods, no failure", nil, "", ""},
		{"FailedCreate first", []corev1.Pod{podWith("router-a", unready)}, `pods "router-" is forbidden: exceeded quota`,
			`pods cannot be created: pods "router-" is forbidden: exceeded quota`},
		{"image pull", []corev1.Pod{podWith("router-a", waiting("ImagePullBackOff", `Back-off pulling image "x"`, 0))}, "",
			`pod router-a: container router is waiting: ImagePullBackOff: Back-off pulling image "x"`},
		{"crash loop with restarts, before a not-ready pod", []corev1.Pod{podWith("router-b", unready), podWith("router-a", waiting("CrashLoopBackOff", "", 3))}, "",
			"pod router-a: container router is waiting: CrashLoopBackOff (restarted 3 times)"},
		{"two waiting", []corev1.Pod{podWith("router-a", waiting("ErrImagePull", "", 0)), podWith("router-b", waiting("ErrImagePull", "", 0))}, "",
			"pod router-a: container router is waiting: ErrImagePull (and 1 more)"},
		{"unschedulable", []corev1.Pod{podWith("router-a", unschedulable)}, "",
			"pod router-a cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu"},
		{"not ready", []corev1.Pod{podWith("router-a", unready)}, "", "pod router-a: container router is running but not ready"},
		{"creating is not trouble", []corev1.Pod{podWith("router-a", waiting("ContainerCreating", "", 0))}, "", ""},
		{"a deleted pod is left out", []corev1.Pod{deleting}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := podTrouble(tc.pods, tc.created); got != tc.want {
				t.Errorf("podTrouble = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWorkloadAvailability(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2))}}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	if !deploymentAvailable(d) {
		t.Error("a finished rollout is not available")
	}
	for name, edit := range map[string]func(*appsv1.DeploymentStatus){
		"generation not observed": func(s *appsv1.DeploymentStatus) { s.ObservedGeneration = 1 },
		"one replica unavailable": func(s *appsv1.DeploymentStatus) { s.AvailableReplicas = 1 },
		"one replica not updated": func(s *appsv1.DeploymentStatus) { s.UpdatedReplicas = 1 },
		"an old pod still serves": func(s *appsv1.DeploymentStatus) { s.Replicas = 3 },
	} {
		c := d.DeepCopy()
		edit(&c.Status)
		if deploymentAvailable(c) {
			t.Errorf("%s: available", name)
		}
	}

	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(3))}}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: 3, UpdatedReplicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
		CurrentRevision: "nats-1", UpdateRevision: "nats-1"}
	if !statefulSetAvailable(sts) {
		t.Error("a finished rollout is not available")
	}
	for name, edit := range map[string]func(*appsv1.StatefulSetStatus){
		"generation not observed":  func(s *appsv1.StatefulSetStatus) { s.ObservedGeneration = 2 },
		"a replica not ready":      func(s *appsv1.StatefulSetStatus) { s.ReadyReplicas = 2 },
		"a replica not available":  func(s *appsv1.StatefulSetStatus) { s.AvailableReplicas = 2 },
		"rolling update under way": func(s *appsv1.StatefulSetStatus) { s.UpdateRevision = "nats-2" },
	} {
		c := sts.DeepCopy()
		edit(&c.Status)
		if statefulSetAvailable(c) {
			t.Errorf("%s: available", name)
		}
	}
}
