package controlplane_test

import (
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// A ready ControlPlane whose passes fail keeps ready True with the failure as reason for the
// grace period, counted from the first failed pass and kept in status (an operator restart does
// not extend it); then it leaves ready for deploying with that reason and a Warning Event, so
// `kubectl wait --for=condition=ready`, the printer column and health checks stop reporting it
// ready. A pass that succeeds makes it ready again and clears the record
// (docs/controlplane.md#failing-while-ready).
func TestFailingReadyControlPlaneLeavesReady(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	g.Expect(h.get().Status.FailingSince).To(BeNil())

	h.api.FailAlways("GET /api/v3/status", fake.Failure{Status: http.StatusInternalServerError})
	h.clock.SetTime(h.clock.Now().Add(controlplane.DefaultControllerVerifyInterval)) // the pass verifies the Controller
	_, _ = h.reconcile()
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonControllerUnavailable)
	since := h.get().Status.FailingSince
	g.Expect(since).NotTo(BeNil())

	// Within the grace period, across an operator restart: still ready, the start kept.
	h.restartOperator()
	h.clock.SetTime(h.clock.Now().Add(controlplane.DefaultReadyGracePeriod - controlplane.DefaultControllerVerifyInterval/2))
	_, _ = h.reconcile()
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonControllerUnavailable)
	g.Expect(h.get().Status.FailingSince.Time).To(BeTemporally("==", since.Time))

	h.clock.SetTime(h.clock.Now().Add(controlplane.DefaultControllerVerifyInterval))
	_, _ = h.reconcile()
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonControllerUnavailable)
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix(corev1.EventTypeWarning + " " + datasancev3.ReasonControllerUnavailable)))

	// Failing on: deploying stays, nothing is rewritten.
	writes := h.cpWrites.Load()
	_, _ = h.reconcile()
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonControllerUnavailable)
	g.Expect(h.cpWrites.Load() - writes).To(BeZero())

	h.api.ClearFailures()
	h.mustBeReady()
	g.Expect(h.get().Status.FailingSince).To(BeNil())
}
