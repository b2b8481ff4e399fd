package controlplane_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// verifyWithin is how soon after a Controller answers again the operator must notice that it
// lost its state (the requirement; the option's default must not exceed it).
const verifyWithin = 30 * time.Second

// A Controller that restarts on an empty database while the ControlPlane is ready, without the
// operator ever seeing it down: passes before the verification is due call nothing; the pass
// 30 s after the last verification asks GET /status, sees a process it does not know, reads the
// registration back (GET /router: 404) and registers the router, the NATS hub and every CA again,
// each CA imported exactly once; the hub follows the Controller's new NATS operator. The pass
// after that only asks GET /status again.
func TestControllerLostItsStateIsRegisteredAgain(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	g.Expect(controlplane.DefaultControllerVerifyInterval).To(BeNumerically("<=", verifyWithin))
	h.api.SetStartedAt(time.Now().Add(-time.Hour))
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	_, hadHub := h.api.Hub()
	g.Expect(hadHub).To(BeTrue())
	cas := h.api.ImportedCAs()
	g.Expect(cas).To(HaveLen(4))

	h.api.Wipe()
	h.api.Reset()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty(), "no call before the verification is due")

	// The new database also made a new NATS operator: the hub follows it, and its pods roll
	// (nats_operator_test.go).
	later := natsClock.Add(verifyWithin)
	h.clock.SetTime(later)
	h.rollOut()
	router, ok := h.api.Router()
	g.Expect(ok).To(BeTrue())
	g.Expect(router.Host).To(Equal(routerLBIP))
	_, ok = h.api.Hub()
	g.Expect(ok).To(BeTrue())
	g.Expect(h.api.ImportedCAs()).To(ConsistOf(cas))
	g.Expect(h.api.RequestsTo("POST", "/api/v3/certificates/ca")).To(HaveLen(len(cas)), "each CA imported exactly once")
	g.Expect(h.api.Calls()).To(HaveExactElements(
		"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/nats/operator", "GET /api/v3/nats/bootstrap",
		"GET /api/v3/router", "PUT /api/v3/router", "PUT /api/v3/nats/hub",
		"GET /api/v3/certificates/ca/router-site-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/default-router-local-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/nats-site-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/default-nats-local-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/status",
	))
	h.api.Reset()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty(), "the rollout's end needs no Controller call")

	h.api.Reset()
	h.clock.SetTime(later.Add(verifyWithin))
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(Equal([]string{"GET /api/v3/status"}), "same process: verified, nothing registered")
}

// The Controller stops answering at a verification: the ControlPlane stays ready with reason
// ControllerUnavailable and asks again every 3 s. The first pass after it answers again sees a
// new process and reads the registration back: a process on the same database holds it, and
// nothing is registered again (one login, GET /router); a process on an empty database is
// registered again in that same pass.
func TestControllerAnsweringAgainIsReadBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		database func(h *harness, dir string) error
		want     []string
	}{
		{name: "same database", database: func(h *harness, dir string) error { return h.api.Restart(dir) },
			want: []string{"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/router"}},
		{name: "empty database", database: func(h *harness, _ string) error { return h.api.Restart(h.t.TempDir()) },
			want: []string{"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/router", "PUT /api/v3/router",
				"GET /api/v3/certificates/ca/router-site-ca", "POST /api/v3/certificates/ca",
				"GET /api/v3/certificates/ca/default-router-local-ca", "POST /api/v3/certificates/ca",
				"GET /api/v3/status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			g := h.g
			dir := t.TempDir()
			g.Expect(h.api.Restart(dir)).To(Succeed())
			h.api.SetStartedAt(time.Now().Add(-time.Hour))
			h.bringUp(h.controlPlane())

			h.api.FailAlways("GET /api/v3/status", fake.Failure{Reset: true})
			h.clock.SetTime(h.clock.Now().Add(verifyWithin))
			h.mustRequeue(controlplane.RequeueControllerStatus)
			h.expectState(datasancev3.ConditionReady, datasancev3.ReasonControllerUnavailable)

			g.Expect(tc.database(h, dir)).To(Succeed())
			h.api.ClearFailures()
			h.api.Reset()
			h.clock.SetTime(h.clock.Now().Add(controlplane.RequeueControllerStatus))
			h.mustBeReady()
			g.Expect(h.api.Calls()).To(HaveExactElements(tc.want))
			_, registered := h.api.Router()
			g.Expect(registered).To(BeTrue())

			h.api.Reset()
			h.clock.SetTime(h.clock.Now().Add(verifyWithin))
			h.mustBeReady()
			g.Expect(h.api.Calls()).To(Equal([]string{"GET /api/v3/status"}), "the new process is known now")
		})
	}
}

// A Controller of three pods on one database: GET /status through the Service is answered by
// any pod, each with its own uptime. Over ten minutes of verification intervals, with watch
// events starting more passes in between, the operator asks one GET /status per 30 s and reads
// the registration back once per pod process it had not seen (the two pods that did not answer
// the registration, then one restarted pod), never registering anything again and writing
// nothing.
func TestSteadyStateWithSeveralControllerPodsIsOneStatusCallPer30s(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	now := time.Now()
	h.api.SetPods(now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-time.Hour))
	h.bringUp(h.controlPlane(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Controller = 3 }))
	h.api.Reset()
	h.writes.Store(0)

	start := h.clock.Now()
	const intervals = 20
	for i := 1; i <= intervals; i++ {
		if i == 10 {
			h.api.RestartPod(1) // a rollout, a drain, an OOM kill: the database stays
		}
		h.clock.SetTime(start.Add(time.Duration(i) * verifyWithin))
		for range 2 {
			h.mustBeReady()
		}
	}
	calls := h.api.Calls()
	count := func(call string) int {
		return len(slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return c != call }))
	}
	g.Expect(count("GET /api/v3/status")).To(Equal(intervals), "one status call per 30 s")
	g.Expect(count("POST /api/v3/user/login")).To(Equal(3), "one read-back per pod process not seen before")
	g.Expect(count("GET /api/v3/router")).To(Equal(3))
	g.Expect(len(calls)).To(Equal(intervals+2*3), "nothing else: %v", calls)
	g.Expect(h.api.RequestsTo(http.MethodPut, "/api/v3/router")).To(BeEmpty(), "nothing registered again")
	g.Expect(h.writes.Load()).To(BeZero(), "nothing written")
}
