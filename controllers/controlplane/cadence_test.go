package controlplane_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// With the Controller resetting every connection for 45 s, the reconciler in a manager keeps the
// design's cadence: about one pass per 3 s (counted as GET /status calls, one per pass), a stable
// condition message so the ControlPlane is not written on every pass (its own status writes
// would otherwise trigger the next pass at once: a hot loop), and no runaway backoff: once the
// Controller answers again the ControlPlane is ready within 30 s.
func TestControllerResetsKeepTheRetryCadence(t *testing.T) {
	// Its own namespace, manager and fake Controller; 45 s of it is a measured outage, which
	// other parallel tests overlap.
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.api.FailAlways("* /api/v3/*", fake.Failure{Reset: true})
	h.startManager()
	h.create(h.controlPlane())
	g.Eventually(func(g Gomega) {
		h.assignAddresses()
		g.Expect(trueConditionOf(h.get()).Reason).To(Equal(datasancev3.ReasonControllerUnavailable))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	// The status comes to rest before the window opens: the last rollouts the test played may
	// still be reported by the pass they trigger. At rest, a whole pass begun after the test's
	// last write writes nothing (two pass ends: the one running at the read may predate it).
	g.Eventually(func(g Gomega) {
		h.assignAddresses()
		writes, ends := h.cpWrites.Load(), h.passEnds.Load()
		g.Eventually(h.passEnds.Load).WithTimeout(15 * time.Second).Should(BeNumerically(">=", ends+2))
		g.Expect(h.cpWrites.Load()).To(Equal(writes))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	message := trueConditionOf(h.get()).Message
	g.Expect(message).To(ContainSubstring("connection reset"))
	g.Expect(message).NotTo(ContainSubstring("->"), "no ephemeral addresses in the condition")

	const outage = 45 * time.Second
	statusCalls := func() int64 { return int64(len(h.api.RequestsTo("GET", "/api/v3/status"))) }
	resets := testfixture.Outage{ // already down: the resets began before the manager started
		Up:       func() error { h.api.ClearFailures(); return nil },
		Counters: []func() int64{statusCalls, h.cpWrites.Load},
	}
	w, err := resets.Hold(h.ctx, outage, func() {
		// The window is the measurement, not a synchronisation: the state must hold all along.
		g.Consistently(func(g Gomega) {
			c := trueConditionOf(h.get())
			g.Expect(c.Reason).To(Equal(datasancev3.ReasonControllerUnavailable))
			g.Expect(c.Message).To(Equal(message))
		}).WithTimeout(outage).WithPolling(time.Second).Should(Succeed())
		g.Expect(h.api.RequestsTo("POST", "/api/v3/user/login")).To(BeEmpty(), "a pass stops at the failed status call")
	})
	recovered := time.Now()
	g.Expect(err).NotTo(HaveOccurred())
	calls, writes := w.Counts[0], w.Counts[1]
	t.Logf("%s of resets: %d status calls, %d ControlPlane writes", w.Took.Round(time.Second), calls, writes)
	perThree := int64(w.Took / (3 * time.Second))
	g.Expect(calls).To(BeNumerically("<=", perThree+2), "at most about one pass per 3 s")
	g.Expect(calls).To(BeNumerically(">=", perThree/2), "still retrying every 3 s, no backoff")
	g.Expect(writes).To(BeZero(), "the same cause writes the same status: nothing to patch")

	g.Eventually(func(g Gomega) {
		h.assignAddresses()
		g.Expect(trueConditionOf(h.get()).Type).To(Equal(datasancev3.ConditionReady))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	t.Logf("ready %s after the Controller recovered", time.Since(recovered).Round(100*time.Millisecond))
}
