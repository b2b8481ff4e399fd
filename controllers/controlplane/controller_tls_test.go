package controlplane_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The fake serves a certificate of a test CA that is not in the system roots and no
// --controller-ca-file is given: the ControlPlane trusts the ca.crt of its own TLS Secret, and
// both the in-cluster endpoint and the LoadBalancer address verify.
func TestHTTPSTrustsTheTLSSecretCA(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTLSController())
	g := h.g
	h.createControllerTLSSecret("controller-tls", false)
	h.bringUp(h.controlPlane(testfixture.WithHTTPS("controller-tls")))
	g.Expect(h.requestedBaseURLs()).To(ContainElement("https://" + h.controllerLB + ":51121"))
	g.Expect(h.api.ImportedCAs()).To(ConsistOf("router-site-ca", "default-router-local-ca"))
}

// A certificate that does not cover the dialled name: reason ControllerCertificateInvalid naming
// the name and the certificate's names, a Warning Event, an error (backoff, not a 3 s loop), and
// no request ever passes the handshake.
func TestHTTPSCertificateForAnotherName(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTLSControllerNames("controller.elsewhere.svc"))
	g := h.g
	h.createControllerTLSSecret("controller-tls", false)
	h.create(h.controlPlane(testfixture.WithHTTPS("controller-tls")))
	h.driveToAPI()
	res, err := h.reconcile()
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "a renewed certificate is picked up by a retry")
	g.Expect(res.RequeueAfter).To(BeZero())
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonControllerCertificateInvalid)
	msg := h.trueCondition().Message
	g.Expect(msg).To(ContainSubstring("does not cover 127.0.0.1"))
	g.Expect(msg).To(ContainSubstring("controller.elsewhere.svc"))
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning ControllerCertificateInvalid")))
	g.Expect(h.api.Calls()).To(BeEmpty())
}

// A TLS Secret without the chain: the CA is not trusted (the reason says where to put it);
// spec.controller.caSecretRef names a CA Secret and the ControlPlane becomes ready. A CA Secret
// holding no PEM is InvalidCertificate, terminal; a missing one is SecretNotFound.
func TestHTTPSExplicitCAReference(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTLSController())
	g := h.g
	h.createControllerTLSSecret("controller-tls", true)
	h.create(h.controlPlane(testfixture.WithHTTPS("controller-tls")))
	h.driveToAPI()
	_, err := h.reconcile()
	g.Expect(err).To(HaveOccurred())
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonControllerCertificateInvalid)
	g.Expect(h.trueCondition().Message).To(And(ContainSubstring("not signed by a trusted CA"), ContainSubstring("spec.controller.caSecretRef")))

	ref := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "controller-ca"}, Key: "bundle.pem"}
	h.update(func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.CASecretRef = ref })
	h.mustRequeue(controlplane.RequeueTransition)
	_, err = h.reconcile()
	g.Expect(err).To(HaveOccurred())
	h.expectState(datasancev3.ConditionUpdating, datasancev3.ReasonSecretNotFound)

	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "controller-ca", Namespace: h.ns},
		Data: map[string][]byte{"bundle.pem": []byte("not a certificate")}}
	g.Expect(env.Client.Create(h.ctx, bad)).To(Succeed())
	_, err = h.reconcile()
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error: %v", err)
	h.expectState(datasancev3.ConditionUpdating, datasancev3.ReasonInvalidCertificate)

	bad.Data = map[string][]byte{"bundle.pem": h.tlsCA.CertPEM}
	g.Expect(env.Client.Update(h.ctx, bad)).To(Succeed())
	h.bringUpExisting()
	g.Expect(h.api.Calls()).To(ContainElement("PUT /api/v3/router"))
}

// The external check dials the LoadBalancer address and verifies the name external clients use,
// the host of spec.controller.publicUrl: a certificate for the LoadBalancer address only is not
// accepted for it, one for the public name (and the in-cluster endpoint) is, though it does not
// name the LoadBalancer address.
func TestHTTPSExternalCheckVerifiesThePublicName(t *testing.T) {
	t.Parallel()
	withPublicURL := []testfixture.Mod{testfixture.WithHTTPS("controller-tls"), testfixture.WithPublicURL("https://controller.example.com:51121")}
	t.Run("certificate without the public name", func(t *testing.T) {
		h := newHarness(t, withTLSController())
		h.createControllerTLSSecret("controller-tls", false)
		h.create(h.controlPlane(withPublicURL...))
		var err error
		for range 6 {
			h.assignAddresses()
			if _, err = h.reconcile(); err != nil {
				break
			}
		}
		h.g.Expect(err).To(HaveOccurred())
		h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonControllerCertificateInvalid)
		h.g.Expect(h.trueCondition().Message).To(And(
			ContainSubstring("https://"+h.controllerLB+":51121"), ContainSubstring("does not cover controller.example.com")))
		h.g.Expect(h.api.Calls()).To(ContainElement("PUT /api/v3/router"), "the in-cluster endpoint verified")
	})
	t.Run("certificate for the public name", func(t *testing.T) {
		h := newHarness(t, withTLSControllerNames("127.0.0.1", "controller.example.com"))
		h.createControllerTLSSecret("controller-tls", false)
		h.bringUp(h.controlPlane(withPublicURL...))
		h.g.Expect(h.requestedBaseURLs()).To(ContainElement("https://" + h.controllerLB + ":51121"))
	})
}

// A certificate for the public host only (cert-manager or a public CA never issues one for
// controller.<ns>.svc.cluster.local or the dialled address): the in-cluster call dials the
// Service and accepts it for the public host, the external check verifies the public host, and
// the ControlPlane becomes ready (docs/controlplane.md#https-certificates).
func TestHTTPSCertificateForThePublicHostOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, withTLSControllerNames("controller.example.com"))
	h.createControllerTLSSecret("controller-tls", false)
	h.bringUp(h.controlPlane(testfixture.WithHTTPS("controller-tls"), testfixture.WithPublicURL("https://controller.example.com:51121")))
	h.g.Expect(h.api.Calls()).To(ContainElement("PUT /api/v3/router"))
	h.g.Expect(h.requestedBaseURLs()).To(ContainElement("https://" + h.controllerLB + ":51121"))
}
