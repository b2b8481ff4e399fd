package sandbox

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAddressPoolIsStablePerObject(t *testing.T) {
	g := NewWithT(t)
	p := newAddressPool()
	a, b := p.get("host/service/demo/router"), p.get("host/service/demo/nats")
	g.Expect(a).To(Equal("127.0.100.1"))
	g.Expect(b).To(Equal("127.0.100.2"))
	g.Expect(p.get("host/service/demo/router")).To(Equal(a))
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
