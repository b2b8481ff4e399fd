package controlplane

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// Outcomes combine: any failure → joined failures (terminal only if all are); otherwise a wait
// with the shortest delay and the reason of the longest wait; otherwise ready.
func TestCombine(t *testing.T) {
	errA := outcome.Retry(datasancev3.ReasonSecretNotFound, errors.New("a"))
	errT := outcome.Stop(datasancev3.ReasonInvalidCertificate, errors.New("t"))
	wait10 := outcome.Wait(datasancev3.ReasonWaitingForLoadBalancer, 10*time.Second, "lb")
	wait5 := outcome.Wait(datasancev3.ReasonWaitingForDeployment, 5*time.Second, "dep")
	cases := []struct {
		name         string
		errs         []error
		wantReady    bool
		wantDelay    time.Duration
		wantReason   string
		wantMessage  string
		wantErr      string
		wantTerminal bool
	}{
		{name: "all done", errs: []error{nil, nil, nil}, wantReady: true},
		{name: "shortest delay, longest wait's reason", errs: []error{wait5, nil, wait10},
			wantDelay: 5 * time.Second, wantReason: datasancev3.ReasonWaitingForLoadBalancer, wantMessage: "lb"},
		{name: "a long wait never hides a short poll", errs: []error{outcome.Wait(datasancev3.ReasonLoginFailed, 10*time.Minute, "held"), wait5},
			wantDelay: 5 * time.Second, wantReason: datasancev3.ReasonLoginFailed, wantMessage: "held"},
		{name: "failure beats wait", errs: []error{wait10, errA, nil},
			wantReason: datasancev3.ReasonSecretNotFound, wantMessage: "a", wantErr: "a"},
		{name: "failures joined, first reason", errs: []error{errA, nil, errT},
			wantReason: datasancev3.ReasonSecretNotFound, wantMessage: "a", wantErr: "a\nt"},
		{name: "all terminal stays terminal", errs: []error{errT, wait5},
			wantReason: datasancev3.ReasonInvalidCertificate, wantMessage: "t", wantErr: "t", wantTerminal: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := combine(tc.errs)
			g.Expect(o.ready()).To(Equal(tc.wantReady))
			g.Expect(o.reason).To(Equal(tc.wantReason))
			g.Expect(o.message).To(Equal(tc.wantMessage))
			res, err := outcome.Result(o.err)
			g.Expect(res.RequeueAfter).To(Equal(tc.wantDelay))
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(o.failed()).To(BeFalse())
				return
			}
			g.Expect(o.failed()).To(BeTrue())
			g.Expect(o.err).To(MatchError(tc.wantErr))
			g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(Equal(tc.wantTerminal))
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
	setComponentStatus(&st, outcome.Stop(datasancev3.ReasonInvalidCertificate, errors.New("bad CA")))
	g.Expect(st).To(Equal(datasancev3.ComponentStatus{Reason: datasancev3.ReasonInvalidCertificate, Message: "bad CA"}))
	setComponentStatus(&st, outcome.Wait(datasancev3.ReasonWaitingForLoadBalancer, time.Second, "lb"))
	g.Expect(st).To(Equal(datasancev3.ComponentStatus{Reason: datasancev3.ReasonWaitingForLoadBalancer, Message: "lb"}))
	setComponentStatus(&st, nil)
	g.Expect(st.Ready).To(BeTrue())
	g.Expect(st.Reason).To(Equal(datasancev3.ReasonReconciled))
}
