package sandbox

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAddressPoolIsStablePerObject(t *testing.T) {
	g := NewWithT(t)
	p := newAddressPool()
	a, b := p.get("host/service/demo/router"), p.get("host/service/demo/nats")
	g.Expect(a).To(Equal("127.0.100.1"))
	g.Expect(b).To(Equal("127.0.100.2"))
	g.Expect(p.get("host/service/demo/router")).To(Equal(a))
}

func TestAvailableDeploymentStatusFollowsSpec(t *testing.T) {
	g := NewWithT(t)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "controller", Generation: 3}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)}}
	st := availableDeploymentStatus(d, metav1.Now())
	g.Expect(st.ObservedGeneration).To(Equal(int64(3)))
	g.Expect([]int32{st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas}).To(Equal([]int32{2, 2, 2, 2}))
	g.Expect(st.Conditions).To(HaveLen(2))
	g.Expect(st.Conditions[0].Type).To(Equal(appsv1.DeploymentAvailable))
	g.Expect(st.Conditions[1].Reason).To(Equal("NewReplicaSetAvailable"))

	// A new template is a new ReplicaSet name; no replicas given means the API default of 1.
	d2 := d.DeepCopy()
	d2.Spec.Replicas = nil
	d2.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "x:2"}}
	st2 := availableDeploymentStatus(d2, metav1.Now())
	g.Expect(st2.AvailableReplicas).To(Equal(int32(1)))
	g.Expect(st2.Conditions[1].Message).NotTo(Equal(st.Conditions[1].Message))
}

func TestAvailableStatefulSetStatusKeepsCollisionCount(t *testing.T) {
	g := NewWithT(t)
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "nats", Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}}
	s.Status.CollisionCount = ptr.To[int32](1)
	st := availableStatefulSetStatus(s)
	g.Expect(st.ReadyReplicas).To(Equal(int32(3)))
	g.Expect(st.CurrentRevision).To(Equal(st.UpdateRevision))
	g.Expect(st.UpdateRevision).To(HavePrefix("nats-"))
	g.Expect(*st.CollisionCount).To(Equal(int32(1)))
}

func TestLastEventsNewestLastAndBounded(t *testing.T) {
	g := NewWithT(t)
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var items []corev1.Event
	for i := range 8 {
		items = append(items, corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(base)},
			EventTime:      metav1.NewMicroTime(base.Add(time.Duration(8-i) * time.Second)),
			Reason:         string(rune('a' + i)),
			InvolvedObject: corev1.ObjectReference{Kind: "ControlPlane", Name: "pot"},
		})
	}
	got := lastEvents(items, 3)
	g.Expect(got).To(HaveLen(3))
	// The newest are those with the latest eventTime: reasons c, b, a (oldest first).
	g.Expect([]string{got[0].Reason, got[1].Reason, got[2].Reason}).To(Equal([]string{"c", "b", "a"}))
	g.Expect(got[2].Object).To(Equal("controlplane/pot"))
}

func TestRenderNamesStateAndComponents(t *testing.T) {
	g := NewWithT(t)
	var b bytes.Buffer
	Render(&b, View{
		ControlPlanes: []ControlPlaneView{{Name: "pot", State: "deploying", Reason: "WaitingForLoadBalancer", Components: []ComponentView{
			{Name: "router", Reason: "WaitingForLoadBalancer"}, {Name: "nats", Ready: true, Reason: "Reconciled", Address: "127.0.100.2"},
		}}},
		Apps: []AppView{{Name: "web", Synced: "False", SyncedReason: "Progressing"}},
	})
	out := b.String()
	g.Expect(out).To(ContainSubstring("ControlPlane demo/pot: deploying (WaitingForLoadBalancer)"))
	g.Expect(out).To(MatchRegexp(`✓ nats +Reconciled +127\.0\.100\.2`))
	g.Expect(out).To(MatchRegexp(`… router +WaitingForLoadBalancer`))
	g.Expect(out).To(ContainSubstring("KubeOperaApp demo/web: Synced=False (Progressing) commit - path"))
}
