package controlplane_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// expectHubTrusts checks that what the hub is given trusts the Controller's current operator:
// server.conf names its JWT and system account, Secret nats-operator-seed holds its seed, and the
// bundle's system-account JWT is signed by it. It returns the StatefulSet's config hash.
func (h *harness) expectHubTrustsTheControllersOperator() string {
	h.t.Helper()
	g := h.g
	want := h.api.Bootstrap()
	conf := h.serverConf()
	g.Expect(conf["operator"]).To(Equal(want.OperatorJwt))
	g.Expect(conf["system_account"]).To(Equal(want.SystemAccountPublicKey))
	g.Expect(string(h.secret("nats-operator-seed").Data["seed"])).To(Equal(want.OperatorSeed))
	sys, err := jwt.DecodeAccountClaims(h.configMap(jwtBundle).Data[want.SystemAccountPublicKey+".jwt"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sys.Issuer).To(Equal(want.OperatorPublicKey), "the bundle's system account is signed by the trusted operator")
	return h.statefulSet().Spec.Template.Annotations[controlplane.AnnotationNatsConfigHash]
}

// An administrator rotates the Controller's NATS operator (POST /nats/operator/rotate) while the
// ControlPlane is ready: the Controller re-signs every account and writes the bundle, which the
// operator watches. The next pass sees the bundle's system account signed by another key, asks
// the bootstrap once, and the hub follows: new operator JWT and seed, the same system account,
// every account key of the bundle kept (no JetStream data is purged), and the pods restart (the
// trusted operator is not reloadable). The pass after that calls nothing.
func TestNatsHubFollowsARotatedOperator(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	g := h.g
	h.controllerWritesToKubernetes()
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	app := h.addAppAccount(m, "app-a", 1)
	before := h.expectHubTrustsTheControllersOperator()
	keys := slices.Sorted(maps.Keys(h.configMap(jwtBundle).Data))
	g.Expect(keys).To(ConsistOf(m.accountPub+".jwt", app.pub+".jwt"))

	h.api.Reset()
	g.Expect(h.api.RotateNatsOperator(h.ctx)).To(Succeed())
	g.Expect(h.api.Bootstrap().OperatorPublicKey).NotTo(Equal(m.operatorPub))
	h.rollOut()
	g.Expect(h.api.RequestsTo("GET", "/api/v3/nats/bootstrap")).To(HaveLen(1))
	g.Expect(h.api.RequestsTo("GET", "/api/v3/nats/operator")).To(BeEmpty(), "the bundle said it: no need to ask")
	after := h.expectHubTrustsTheControllersOperator()
	g.Expect(after).NotTo(Equal(before), "the pods restart")
	g.Expect(h.serverConf()["system_account"]).To(Equal(m.accountPub))
	bundle := h.configMap(jwtBundle).Data
	g.Expect(slices.Sorted(maps.Keys(bundle))).To(Equal(keys), "no account lost")
	appClaims, err := jwt.DecodeAccountClaims(bundle[app.pub+".jwt"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(appClaims.Issuer).To(Equal(h.api.Bootstrap().OperatorPublicKey))
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix(corev1.EventTypeNormal + " NatsOperatorChanged The Controller's NATS operator changed from " + m.operatorPub)))

	h.api.Reset()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty(), "steady again: the stored material is the Controller's")
}

// A Controller that restarts on an empty database makes a new NATS operator, system account
// and hub system user at its next NATS call. The verification that sees the new process asks
// GET /nats/operator once; the key differs, so the bootstrap is fetched and the hub follows. This
// Controller does not write the bundle (no Kubernetes target): the operator sets the new system
// account's key itself, and keeps every key the bundle had (the old accounts' streams stay on
// disk, unpurged).
func TestNatsHubFollowsAControllerThatLostItsDatabase(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	g := h.g
	h.api.SetStartedAt(time.Now().Add(-time.Hour))
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	before := h.expectHubTrustsTheControllersOperator()
	oldKeys := h.configMap(jwtBundle).Data

	h.api.Wipe()
	h.api.Reset()
	h.clock.SetTime(natsClock.Add(verifyWithin))
	h.rollOut()
	g.Expect(h.api.RequestsTo("GET", "/api/v3/nats/operator")).To(HaveLen(1))
	g.Expect(h.api.RequestsTo("GET", "/api/v3/nats/bootstrap")).To(HaveLen(1))
	g.Expect(h.api.RequestsTo("POST", "/api/v3/user/login")).To(HaveLen(1), "one login for the whole pass")
	after := h.expectHubTrustsTheControllersOperator()
	g.Expect(after).NotTo(Equal(before), "the pods restart")
	g.Expect(h.serverConf()["system_account"]).NotTo(Equal(m.accountPub), "a new system account")
	bundle := h.configMap(jwtBundle).Data
	for k, v := range oldKeys {
		g.Expect(bundle).To(HaveKeyWithValue(k, v), "kept: a key the bundle loses purges its account's streams")
	}
	g.Expect(bundle).To(HaveLen(len(oldKeys) + 1))
	_, registered := h.api.Router()
	g.Expect(registered).To(BeTrue(), "the registration is made again in the same pass")

	h.api.Reset()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty())
}

// A new Controller process on the same database holds the same operator: one GET /nats/operator
// besides the registration read-back, no bootstrap, nothing written. A Controller that cannot
// answer the route (an older one: 404) is not a change either; the stored material stays.
func TestNatsOperatorUnchangedOnANewControllerProcess(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	dir := t.TempDir()
	g.Expect(h.api.Restart(dir)).To(Succeed())
	h.api.SetBootstrap(h.api.Bootstrap()) // the material of newNatsHarness, now in the database of dir
	h.api.SetStartedAt(time.Now().Add(-time.Hour))
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	before := h.expectHubTrustsTheControllersOperator()

	for i, failure := range []*fake.Failure{nil, {Status: 404}} {
		g.Expect(h.api.Restart(dir)).To(Succeed())
		h.api.SetStartedAt(time.Now().Add(-time.Duration(i+1) * time.Minute)) // a process of its own
		if failure != nil {
			h.api.FailNext("GET /api/v3/nats/operator", *failure)
		}
		h.api.Reset()
		h.writes.Store(0)
		h.clock.SetTime(natsClock.Add(time.Duration(i+1) * verifyWithin))
		h.mustBeReady()
		g.Expect(h.api.Calls()).To(HaveExactElements(
			"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/nats/operator",
			"GET /api/v3/router", "GET /api/v3/nats/hub"), "case %d", i)
		g.Expect(h.writes.Load()).To(BeZero())
		g.Expect(h.expectHubTrustsTheControllersOperator()).To(Equal(before))
	}
}

// The real NATS server, as TestRealNatsServer runs it, across a rotation of the Controller's
// operator: the Controller re-signs the accounts and writes the bundle, the running pods mirror it
// (nothing is purged: every key stays), the operator renders the new trust, and after the
// rollout an application's user connects and finds its stream, and the hub system user (whose
// creds did not change) connects for the wrapper's purge.
func TestRealNatsServerFollowsARotatedOperator(t *testing.T) {
	// Not parallel: the pods' environment reaches nats-server through the process environment.
	h, m := newNatsHarness(t)
	g := h.g
	pods := h.startRealNats()
	app, stream := h.applicationStream(m, pods)

	g.Expect(h.api.RotateNatsOperator(h.ctx)).To(Succeed())
	g.Expect(pods.bundleChanged()).To(BeEmpty(), "the re-signed bundle keeps every key: nothing purged")
	h.rollOut()
	h.expectHubTrustsTheControllersOperator()
	g.Expect(pods.restart()).To(BeEmpty(), "no account to purge after the rollout")
	for _, p := range pods.pods {
		expectStream(t, p, app, stream, "ping-2")
	}
}
