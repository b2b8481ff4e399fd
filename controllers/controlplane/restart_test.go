package controlplane_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// A Controller that restarts on an empty database while the ControlPlane is ready: passes within
// the verification interval call nothing; the first pass after it asks GET /status, sees a new
// process (its uptime), and registers the router, the NATS hub and every CA again, each CA
// imported exactly once. The pass after that only asks GET /status again.
func TestControllerLostItsStateIsRegisteredAgain(t *testing.T) {
	h, _ := newNatsHarness(t)
	g := h.g
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

	later := natsClock.Add(controlplane.DefaultControllerVerifyInterval)
	h.clock.SetTime(later)
	h.writes.Store(0)
	h.mustBeReady()
	router, ok := h.api.Router()
	g.Expect(ok).To(BeTrue())
	g.Expect(router.Host).To(Equal(routerLBIP))
	_, ok = h.api.Hub()
	g.Expect(ok).To(BeTrue())
	g.Expect(h.api.ImportedCAs()).To(ConsistOf(cas))
	g.Expect(h.api.RequestsTo("POST", "/api/v3/certificates/ca")).To(HaveLen(len(cas)), "each CA imported exactly once")
	g.Expect(h.api.Calls()).To(HaveExactElements(
		"GET /api/v3/status", "POST /api/v3/user/login", "PUT /api/v3/router", "PUT /api/v3/nats/hub",
		"GET /api/v3/certificates/ca/router-site-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/default-router-local-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/nats-site-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/default-nats-local-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/status",
	))
	g.Expect(h.writes.Load()).To(BeZero(), "the registration is unchanged: nothing to write")

	h.api.Reset()
	h.clock.SetTime(later.Add(controlplane.DefaultControllerVerifyInterval))
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(Equal([]string{"GET /api/v3/status"}), "same process: verified, nothing registered")
}
