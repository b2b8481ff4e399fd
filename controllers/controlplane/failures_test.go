package controlplane_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// The Controller API down, answering 500 or garbage: a requeue with the spec's delay and a
// reason, never a panic; once it recovers the ControlPlane becomes ready.
func TestControllerAPIFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		breakAPI func(*fake.Server)
		delay    time.Duration
		reason   string
	}{
		{"status 500", failAlways("GET /api/v3/status", fake.Failure{Status: http.StatusInternalServerError}),
			controlplane.RequeueControllerStatus, datasancev3.ReasonControllerUnavailable},
		{"status garbage", failAlways("GET /api/v3/status", fake.Failure{Garbage: true}),
			controlplane.RequeueControllerStatus, datasancev3.ReasonControllerUnavailable},
		{"status 503 readiness", failAlways("GET /api/v3/status", fake.Failure{Status: http.StatusServiceUnavailable}),
			controlplane.RequeueControllerStatus, datasancev3.ReasonControllerUnavailable},
		// A login the Controller does not answer properly is the Controller's outage, not a
		// credential problem (LoginFailed is terminal for health checks).
		{"login 500", failAlways("POST /api/v3/user/login", fake.Failure{Status: http.StatusInternalServerError}),
			controlplane.RequeueControllerStatus, datasancev3.ReasonControllerUnavailable},
		{"router 500", failAlways("PUT /api/v3/router", fake.Failure{Status: http.StatusInternalServerError}),
			controlplane.RequeueRegistration, datasancev3.ReasonRegistrationFailed},
		{"router garbage 502", failAlways("PUT /api/v3/router", fake.Failure{Garbage: true, Status: http.StatusBadGateway}),
			controlplane.RequeueRegistration, datasancev3.ReasonRegistrationFailed},
		{"CA lookup garbage", failAlways("GET /api/v3/certificates/ca/*", fake.Failure{Body: []byte(`{"name":`)}),
			controlplane.RequeueRegistration, datasancev3.ReasonRegistrationFailed},
		// The router imported its CAs while the test drove the install; a Controller that lost
		// them is asked to import them again.
		{"CA import 500", func(s *fake.Server) {
			s.Wipe()
			s.FailAlways("POST /api/v3/certificates/ca", fake.Failure{Status: http.StatusInternalServerError})
		}, controlplane.RequeueRegistration, datasancev3.ReasonRegistrationFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			g := h.g
			h.create(h.controlPlane())
			h.driveToAPI()
			tc.breakAPI(h.api)
			h.mustRequeue(tc.delay)
			h.expectState(datasancev3.ConditionDeploying, tc.reason)
			g.Expect(h.trueCondition().Message).NotTo(BeEmpty())
			g.Expect(h.get().Status.Controller.Ready).To(BeFalse())

			h.api.ClearFailures()
			h.mustBeReady()
		})
	}
}

// A Controller that is not there at all (connection refused) is the same: requeue 3 s.
func TestControllerAPIDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.create(h.controlPlane())
	h.driveToAPI()
	h.api.Close()
	h.mustRequeue(controlplane.RequeueControllerStatus)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonControllerUnavailable)
}

// A refused registration that no retry can fix (400) is an error with a reason, retried with
// backoff rather than at a fixed delay; it is not terminal.
func TestRegistrationRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane())
	h.driveToAPI()
	h.api.FailAlways("PUT /api/v3/router", fake.Failure{Status: http.StatusBadRequest, Message: "Required field 'host' is missing"})
	res, err := h.reconcile()
	g.Expect(err).To(MatchError(ContainSubstring("HTTP 400 ValidationError")))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse())
	g.Expect(res.RequeueAfter).To(BeZero())
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonRegistrationFailed)
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning RegistrationFailed")))
}

func failAlways(route string, f fake.Failure) func(*fake.Server) {
	return func(s *fake.Server) { s.FailAlways(route, f) }
}
