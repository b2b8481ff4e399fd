package controlplane_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// A Controller that restarted on an empty database provisions an agent (router mode none) and
// opens an exec session before the operator verifies it: it made router-site-ca and
// default-router-local-ca itself (_handleRouterCertificates), signed the agent's certificate with
// the local one, and its own exec-session certificate. The kept CA Secrets differ from both. The
// verification decides each without a person: router-site-ca signed nothing, so the Secret's CA
// (the hub's) replaces the Controller's; default-router-local-ca has an agent depending on it, so
// the operator-made Secret takes the Controller's CA, keeping its own under previous-tls.*, and
// the router's local leaf is issued again under it. No CAConflict, ready again.
func TestCAsTheControllerMadeOnANewDatabaseAreSettled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.api.SetStartedAt(time.Now().Add(-time.Hour))
	h.bringUp(h.controlPlane())
	site, local := h.secret("router-site-ca"), h.secret("default-router-local-ca")

	h.api.Wipe()
	g.Expect(h.api.ProvisionAgent("edge-1", true)).To(Succeed())
	g.Expect(h.api.ExecSession("controller-5f7b9-xk2lp")).To(Succeed())
	controllerSite, _, _ := h.api.CA("router-site-ca")
	controllerLocal, _, _ := h.api.CA("default-router-local-ca")
	g.Expect(controllerSite).NotTo(Equal(site.Data[pki.TLSCertKey]))
	g.Expect(controllerLocal).NotTo(Equal(local.Data[pki.TLSCertKey]))

	h.api.Reset()
	h.clock.SetTime(h.clock.Now().Add(verifyWithin))
	h.bringUpExisting()

	held, _, _ := h.api.CA("router-site-ca")
	g.Expect(held).To(Equal(site.Data[pki.TLSCertKey]), "router-site-ca: the Secret's CA replaced the Controller's unused one")
	g.Expect(h.secret("router-site-ca").Data).To(Equal(site.Data), "its Secret is untouched")
	g.Expect(h.api.RequestsTo(http.MethodDelete, "/api/v3/certificates/ca/router-site-ca")).To(HaveLen(1))

	adopted := h.secret("default-router-local-ca")
	g.Expect(adopted.Data[pki.TLSCertKey]).To(Equal(controllerLocal), "default-router-local-ca: the Controller's CA, which the agent depends on, stays")
	g.Expect(adopted.Data["previous-tls.crt"]).To(Equal(local.Data[pki.TLSCertKey]), "the Secret's earlier CA is kept")
	g.Expect(adopted.Data["previous-tls.key"]).To(Equal(local.Data[pki.TLSPrivateKeyKey]))
	g.Expect(h.api.RequestsTo(http.MethodDelete, "/api/v3/certificates/ca/default-router-local-ca")).To(BeEmpty())
	g.Expect(h.api.SignedBy("default-router-local-ca")).To(ConsistOf("router-local-agent-edge-1", "controller-exec-session-client-controller-5f7b9-xk2lp"))
	adoptedCA, err := pki.ParseCA(adopted.Data[pki.TLSCertKey], adopted.Data[pki.TLSPrivateKeyKey])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.certificate("router-local-server").CheckSignatureFrom(adoptedCA.Cert)).To(Succeed(), "the router's local leaf is issued under the adopted CA")

	events := h.rec.list()
	g.Expect(events).To(ContainElement(HavePrefix("Normal CAReplaced The Controller held another CA router-site-ca")))
	g.Expect(events).To(ContainElement(HavePrefix("Normal CAAdopted The Controller holds another CA default-router-local-ca, which agents' certificates depend on (router-local-agent-edge-1)")))
	g.Expect(warnings(h, datasancev3.ReasonCAConflict)).To(BeEmpty())

	h.api.Reset()
	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty(), "settled: nothing to ask")
	g.Expect(h.writes.Load()).To(BeZero())
}

// Rotating default-router-local-ca while the Controller signs with it only for itself: every
// Controller process made an exec-session client certificate under it. The operator deletes
// those certificates (the Controller would refuse to delete its CA), replaces the CA, and rolls
// the Controller's pods, which keep the old certificate and CA in memory and make new ones under
// the new CA when they start. An operator restart keeps the roll's stamp: nothing rolls again.
func TestLocalCARotationWithTheControllersOwnCertificates(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	for _, pod := range []string{"controller-5f7b9-xk2lp", "controller-6c8d4-q9w3e"} {
		g.Expect(h.api.ExecSession(pod)).To(Succeed())
	}
	g.Expect(h.deployment("controller").Spec.Template.Annotations).NotTo(HaveKey(controlplane.AnnotationRestartedAt))

	rotated, err := pki.GenerateCA("default-router-local-ca", time.Now(), 0, pki.WithKeyGenerator(testKeyGenerator))
	g.Expect(err).NotTo(HaveOccurred())
	h.putSecretData("default-router-local-ca", pki.SecretData(rotated, nil))
	h.api.Reset()
	h.rollOut()
	h.mustBeReady()

	held, _, _ := h.api.CA("default-router-local-ca")
	g.Expect(held).To(Equal(rotated.CertPEM))
	g.Expect(h.api.SignedBy("default-router-local-ca")).To(BeEmpty())
	deletes := slices.Collect(func(yield func(string) bool) {
		for _, r := range h.api.Requests() {
			if r.Method == http.MethodDelete && !yield(r.Path) {
				return
			}
		}
	})
	g.Expect(deletes).To(Equal([]string{
		"/api/v3/certificates/controller-exec-session-client-controller-5f7b9-xk2lp",
		"/api/v3/certificates/controller-exec-session-client-controller-6c8d4-q9w3e",
		"/api/v3/certificates/ca/default-router-local-ca",
	}), "the Controller's own certificates, then its CA")
	stamp := h.deployment("controller").Spec.Template.Annotations[controlplane.AnnotationRestartedAt]
	g.Expect(stamp).To(Equal(h.clock.Now().UTC().Format(time.RFC3339)), "the Controller's pods roll")
	g.Expect(h.certificate("router-local-server").CheckSignatureFrom(rotated.Cert)).To(Succeed())
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Normal CAReimported")))

	h.restartOperator()
	h.clock.SetTime(h.clock.Now().Add(time.Hour))
	h.bringUpExisting()
	g.Expect(h.deployment("controller").Spec.Template.Annotations).To(HaveKeyWithValue(controlplane.AnnotationRestartedAt, stamp), "rolled once")
}

// Bad input: the Controller's copy that agents depend on is not a CA the operands can use (an
// ECDSA key; the router needs RSA). It cannot be taken into the Secret, and the Secret's CA
// cannot replace it: the verification that finds it ends in CAConflict, terminal, one Warning
// Event, the Secret untouched. The failing pass had registered the router again before the CA
// step refused; later passes still end in CAConflict, because a registration that stopped
// part-way no longer claims the whole registration (the read-back compares router and hub only).
func TestUnusableControllerCAAgentsDependOnIsAConflict(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.api.SetStartedAt(time.Now().Add(-time.Hour))
	h.bringUp(h.controlPlane())
	local := h.secret("default-router-local-ca")

	h.api.Wipe()
	g.Expect(h.api.ImportCA("default-router-local-ca")).To(Succeed()) // the double's ECDSA stand-in
	g.Expect(h.api.IssueCertificate("router-local-agent-edge-1", "default-router-local-ca")).To(Succeed())
	h.clock.SetTime(h.clock.Now().Add(verifyWithin))
	h.assignAddresses()
	_, last := h.reconcile()
	g.Expect(last).To(MatchError(reconcile.TerminalError(nil)))
	st := h.get().Status.Controller
	g.Expect(st.Reason).To(Equal(datasancev3.ReasonCAConflict))
	g.Expect(st.Message).To(And(ContainSubstring("router-local-agent-edge-1"), ContainSubstring("not an RSA key")))
	g.Expect(h.secret("default-router-local-ca").Data).To(Equal(local.Data), "the Secret is not written")
	g.Expect(h.api.RequestsTo(http.MethodDelete, "/api/v3/certificates/ca/default-router-local-ca")).To(BeEmpty())
	g.Expect(warnings(h, datasancev3.ReasonCAConflict)).To(HaveLen(1), "one Event per cause")

	// The failing pass re-registered the router before the CA step refused: the next passes
	// must not take the router's read-back for the whole registration and end ready.
	for range 2 {
		h.clock.SetTime(h.clock.Now().Add(verifyWithin))
		_, err := h.reconcile()
		g.Expect(err).To(MatchError(reconcile.TerminalError(nil)))
		g.Expect(h.get().Status.Controller.Reason).To(Equal(datasancev3.ReasonCAConflict))
	}
	g.Expect(h.secret("default-router-local-ca").Data).To(Equal(local.Data), "the Secret is not written")
	g.Expect(warnings(h, datasancev3.ReasonCAConflict)).To(HaveLen(1), "one Event per cause")
}
