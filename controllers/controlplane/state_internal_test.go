package controlplane

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// Results combine: any error → joined errors (terminal only if all are); otherwise the shortest
// delay, with the reason of the longest wait; otherwise ready.
func TestCombine(t *testing.T) {
	errA := withReason(datasancev3.ReasonSecretNotFound, errors.New("a"))
	errT := terminal(datasancev3.ReasonInvalidCertificate, errors.New("t"))
	wait10 := requeue(10*time.Second, datasancev3.ReasonWaitingForLoadBalancer, "lb")
	wait5 := requeue(5*time.Second, datasancev3.ReasonWaitingForDeployment, "dep")
	cases := []struct {
		name         string
		outs         []componentOutcome
		wantReady    bool
		wantDelay    time.Duration
		wantReason   string
		wantErr      string
		wantTerminal bool
	}{
		{name: "all continue", outs: []componentOutcome{{}, {}, {}}, wantReady: true},
		{name: "shortest delay, longest wait's reason", outs: []componentOutcome{{res: wait5}, {}, {res: wait10}},
			wantDelay: 5 * time.Second, wantReason: datasancev3.ReasonWaitingForLoadBalancer},
		{name: "a long wait never hides a short poll", outs: []componentOutcome{{res: requeue(10*time.Minute, datasancev3.ReasonLoginFailed, "held")}, {res: wait5}},
			wantDelay: 5 * time.Second, wantReason: datasancev3.ReasonLoginFailed},
		{name: "error beats requeue", outs: []componentOutcome{{res: wait10}, {err: errA}, {}},
			wantReason: datasancev3.ReasonSecretNotFound, wantErr: "a"},
		{name: "errors joined, first reason", outs: []componentOutcome{{err: errA}, {}, {err: errT}},
			wantReason: datasancev3.ReasonSecretNotFound, wantErr: "a\nt"},
		{name: "all terminal stays terminal", outs: []componentOutcome{{err: errT}, {res: wait5}},
			wantReason: datasancev3.ReasonInvalidCertificate, wantErr: "terminal error: t", wantTerminal: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := combine(tc.outs)
			g.Expect(o.ready()).To(Equal(tc.wantReady))
			g.Expect(o.requeueAfter).To(Equal(tc.wantDelay))
			g.Expect(o.reason).To(Equal(tc.wantReason))
			if tc.wantErr == "" {
				g.Expect(o.err).NotTo(HaveOccurred())
				return
			}
			g.Expect(o.err).To(MatchError(tc.wantErr))
			g.Expect(isTerminal(o.err)).To(Equal(tc.wantTerminal))
		})
	}
}

// The effective state (docs/controlplane.md#effective-state) and the one-True-condition rule.
func TestStateMachine(t *testing.T) {
	g := NewWithT(t)
	cp := &datasancev3.ControlPlane{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	g.Expect(effectiveState(cp)).To(Equal(datasancev3.ConditionDeploying))
	g.Expect(needsTransition(cp, datasancev3.ConditionDeploying)).To(BeTrue())

	setState(cp, datasancev3.ConditionDeploying, datasancev3.ReasonProgressing, "p")
	g.Expect(needsTransition(cp, datasancev3.ConditionDeploying)).To(BeFalse())
	setState(cp, datasancev3.ConditionReady, datasancev3.ReasonReconciled, "r")
	g.Expect(effectiveState(cp)).To(Equal(datasancev3.ConditionReady))
	g.Expect(trueCondition(cp).Type).To(Equal(datasancev3.ConditionReady))
	g.Expect(cp.Status.Conditions).To(ContainElement(And(
		HaveField("Type", datasancev3.ConditionDeploying),
		HaveField("Status", metav1.ConditionFalse),
		HaveField("Reason", datasancev3.ReasonTransitioned))))

	// The ready→updating jump happens on the generation alone.
	cp.Generation = 2
	g.Expect(effectiveState(cp)).To(Equal(datasancev3.ConditionUpdating))
	setState(cp, datasancev3.ConditionUpdating, datasancev3.ReasonProgressing, "u")
	g.Expect(effectiveState(cp)).To(Equal(datasancev3.ConditionUpdating))
	trues := 0
	for _, c := range cp.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			trues++
		}
	}
	g.Expect(trues).To(Equal(1))

	// An unknown True condition counts as no valid state.
	cp.Status.Conditions = []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, ObservedGeneration: 2}}
	g.Expect(effectiveState(cp)).To(Equal(datasancev3.ConditionDeploying))
}

func TestSetComponentStatus(t *testing.T) {
	g := NewWithT(t)
	var st datasancev3.ComponentStatus
	setComponentStatus(&st, proceed(), terminal(datasancev3.ReasonInvalidCertificate, errors.New("bad CA")))
	g.Expect(st).To(Equal(datasancev3.ComponentStatus{Reason: datasancev3.ReasonInvalidCertificate, Message: "bad CA"}))
	setComponentStatus(&st, requeue(time.Second, datasancev3.ReasonWaitingForLoadBalancer, "lb"), nil)
	g.Expect(st).To(Equal(datasancev3.ComponentStatus{Reason: datasancev3.ReasonWaitingForLoadBalancer, Message: "lb"}))
	setComponentStatus(&st, proceed(), nil)
	g.Expect(st.Ready).To(BeTrue())
	g.Expect(st.Reason).To(Equal(datasancev3.ReasonReconciled))
}
