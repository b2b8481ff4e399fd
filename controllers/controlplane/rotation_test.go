package controlplane_test

import (
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

var (
	// operatorCAs are the CA Secrets the operator generates when none is brought.
	operatorCAs = map[string]string{
		"router-site-ca": "", "default-router-local-ca": "", "nats-site-ca": "", "default-nats-local-ca": "",
	}
	// operatorLeaves are the leaf Secrets the operator issues, with their CA Secret.
	operatorLeaves = map[string]string{
		"router-site-server": "router-site-ca", "router-local-server": "default-router-local-ca",
		"nats-site-server": "nats-site-ca", "nats-mqtt-server": "default-nats-local-ca",
	}
)

// Rotation with the injected clock: one minute before two thirds of the leaves' lifetime a ready
// pass writes nothing and asks to come back at the renewal time; past it, every leaf the
// operator issued gets a new certificate and key under the same CA, the CA Secrets are not
// written (the operator's CAs are long-lived: they were generated with the leaves, so two thirds
// of their lifetime has passed too), the router and NATS pods roll, the expiry metric moves, and
// the Controller is not registered again.
func TestCertificatesRenewAtTwoThirds(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))

	before := map[string]*corev1.Secret{}
	for name := range operatorCAs {
		before[name] = h.secret(name)
	}
	for name := range operatorLeaves {
		before[name] = h.secret(name)
	}
	first := h.certificate("router-site-server")
	renewAt := pki.RenewalTime(first.NotBefore, first.NotAfter)
	g.Expect(renewAt.Sub(first.NotBefore)).To(Equal(pki.DefaultValidity / 3 * 2))
	for name := range operatorLeaves {
		c := h.certificate(name)
		g.Expect(pki.RenewalTime(c.NotBefore, c.NotAfter)).To(Equal(renewAt), name)
	}
	g.Expect(certificateExpiry(g, h.ns, "router-site-server")).To(Equal(float64(first.NotAfter.Unix())))
	routerHash := h.deployment("router").Spec.Template.Annotations[controlplane.AnnotationTLSHash]
	natsTemplate := h.statefulSet().Spec.Template
	h.api.Reset()

	// Before two thirds: zero writes; the ready pass comes back exactly at the renewal time.
	h.clock.SetTime(renewAt.Add(-20 * time.Second))
	h.writes.Store(0)
	h.mustRequeue(20 * time.Second)
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonReconciled)
	g.Expect(h.writes.Load()).To(BeZero(), "nothing is written before the renewal time")

	// Past two thirds: the leaves are renewed, with keys of the real generator (the test pool
	// would hand out the same four keys again).
	h.r.KeyGenerator = nil
	now := renewAt.Add(time.Minute)
	h.clock.SetTime(now)
	// The pass that renews them rolls the router pods and waits for them; the pass after is ready.
	h.rollOut()
	h.mustBeReady()
	for name := range operatorCAs {
		after := h.secret(name)
		g.Expect(after.ResourceVersion).To(Equal(before[name].ResourceVersion), "CA %s is not written", name)
		g.Expect(after.Data).To(Equal(before[name].Data), name)
	}
	for name, caName := range operatorLeaves {
		after := h.secret(name)
		g.Expect(after.UID).To(Equal(before[name].UID), "%s renewed in place", name)
		g.Expect(after.Data["tls.crt"]).NotTo(Equal(before[name].Data["tls.crt"]), name)
		g.Expect(after.Data["tls.key"]).NotTo(Equal(before[name].Data["tls.key"]), "%s has a new key", name)
		g.Expect(after.Data["ca.crt"]).To(Equal(before[caName].Data["tls.crt"]), name)
		c := h.certificate(name)
		g.Expect(c.NotBefore).To(BeTemporally("==", now.Truncate(time.Second)), name)
		g.Expect(c.DNSNames).To(Equal(parseCert(g, before[name].Data["tls.crt"]).DNSNames), "%s keeps its SANs", name)
		roots := x509.NewCertPool()
		roots.AddCert(parseCert(g, before[caName].Data["tls.crt"]))
		_, err := c.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		g.Expect(err).NotTo(HaveOccurred(), "%s is signed by the same CA", name)
		g.Expect(h.rec.list()).To(ContainElement(And(HavePrefix("Normal CertificateIssued"),
			ContainSubstring(name+" (two thirds of its lifetime passed)"))))
	}
	renewed := h.certificate("router-site-server")
	g.Expect(certificateExpiry(g, h.ns, "router-site-server")).To(Equal(float64(renewed.NotAfter.Unix())), "the expiry metric moves")
	g.Expect(h.deployment("router").Spec.Template.Annotations[controlplane.AnnotationTLSHash]).NotTo(Equal(routerHash), "the router pods roll")
	g.Expect(h.statefulSet().Spec.Template).To(Equal(natsTemplate), "the NATS pods reload their certificates: no rollout")
	g.Expect(registrationCalls(h.api.Calls())).To(BeEmpty(), "renewal registers nothing with the Controller")

	// The next pass writes nothing.
	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeZero())
}

// A rotated bring-your-own CA the Controller has signed nothing with yet: when the user replaces
// the content of CA Secret router-site-ca, the next pass compares it with the Controller's copy
// (the one this ControlPlane imported), sees in the Controller's certificate list that no agent
// depends on it, and replaces that copy (DELETE, then the import POST: the Controller has no
// update) before it issues the leaf under the new CA, exactly once per
// content; the router, the NATS hub and the other CAs are not registered again. (A CA the
// Controller has used: TestCARotationWaitsForTheController.)
func TestRotatedCAIsReimportedOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	byo := h.createTLSSecret("router-site-ca")
	h.bringUp(h.controlPlane())
	g.Expect(h.api.CAImports("router-site-ca")).To(HaveLen(1))
	g.Expect(h.api.CAImports("default-router-local-ca")).To(HaveLen(1))

	// The user rotates the CA (a new key: a new CA, not a re-signed copy).
	newCA, err := pki.GenerateCA("router-site-ca", time.Now(), 0)
	g.Expect(err).NotTo(HaveOccurred())
	byo.Data = pki.SecretData(newCA, nil)
	g.Expect(env.Client.Update(h.ctx, byo)).To(Succeed())
	h.api.Reset()
	// The new leaf rolls the router pods: that pass waits for them, the pass after is ready.
	h.rollOut()
	h.mustBeReady()

	g.Expect(registrationCalls(h.api.Calls())).To(Equal([]string{
		"GET /api/v3/certificates/ca/router-site-ca", "GET /api/v3/certificates",
		"DELETE /api/v3/certificates/ca/router-site-ca", "POST /api/v3/certificates/ca",
	}), "only the rotated CA is replaced (no agent depends on it): no router, no other CA")
	g.Expect(h.api.CAImports("router-site-ca")).To(HaveLen(1))
	held, _, _ := h.api.CA("router-site-ca")
	g.Expect(held).To(Equal(newCA.CertPEM), "the Controller holds the new CA")
	server := h.certificate("router-site-server")
	g.Expect(server.CheckSignatureFrom(newCA.Cert)).To(Succeed(), "the leaf is issued under the new CA")
	g.Expect(h.secret("router-site-server").Data["ca.crt"]).To(Equal(newCA.CertPEM))
	g.Expect(h.rec.list()).To(ContainElement(And(HavePrefix("Normal CertificateIssued"), ContainSubstring("router-site-server (its CA changed)"))))
	g.Expect(h.rec.list()).To(ContainElement(And(HavePrefix("Normal CAReimported"), ContainSubstring("router-site-ca"))))

	// Exactly once per content: later passes import nothing.
	h.api.Reset()
	h.mustBeReady()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty())
}

// Bad bring-your-own material, on the router and on NATS: a CA that does not parse, a CA whose
// key is not its certificate's, a certificate that is no CA, a leaf not signed by its CA. Each
// is InvalidCertificate, terminal, with a message naming the Secret and the problem, and one
// Warning Event however many passes fail on it; fixing the Secret lets the ControlPlane become
// ready.
func TestBadBroughtCertificates(t *testing.T) {
	t.Parallel()
	foreignCA, err := pki.GenerateCA("someone-else", time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := pki.GenerateCA("other", time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	foreignLeaf, err := pki.GenerateLeaf(foreignCA, "x", []string{"x.example.com"}, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	type badCase struct {
		name, want string
		data       func(ca *pki.KeyPair) map[string][]byte
	}
	cases := []badCase{
		{name: "CA not PEM", want: "does not hold a PEM certificate and private key",
			data: func(*pki.KeyPair) map[string][]byte {
				return map[string][]byte{"tls.crt": []byte("not PEM"), "tls.key": []byte("not PEM")}
			}},
		{name: "CA key mismatch", want: "holds a private key that does not match its certificate",
			data: func(ca *pki.KeyPair) map[string][]byte {
				return map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": otherKey.KeyPEM}
			}},
		{name: "not a CA", want: "holds a certificate that is not a CA",
			data: func(*pki.KeyPair) map[string][]byte { return pki.SecretData(foreignLeaf, foreignCA.CertPEM) }},
		{name: "leaf not signed by its CA", want: "holds a certificate that is not signed by CA Secret",
			data: func(*pki.KeyPair) map[string][]byte { return pki.SecretData(foreignLeaf, foreignCA.CertPEM) }},
	}
	components := []struct {
		name       string
		ca, leaf   string
		controlPl  func(h *harness) *datasancev3.ControlPlane
		harness    func(t *testing.T) *harness
		status     func(cp *datasancev3.ControlPlane) datasancev3.ComponentStatus
		addressing func(h *harness)
	}{
		{name: "router", ca: "default-router-local-ca", leaf: "router-local-server",
			harness:   func(t *testing.T) *harness { return newHarness(t) },
			controlPl: func(h *harness) *datasancev3.ControlPlane { return h.controlPlane() },
			status: func(cp *datasancev3.ControlPlane) datasancev3.ComponentStatus {
				return cp.Status.Router.ComponentStatus
			},
			addressing: func(h *harness) { h.assignAddresses() }},
		{name: "NATS", ca: "nats-site-ca", leaf: "nats-site-server",
			harness: func(t *testing.T) *harness { h, _ := newNatsHarness(t); return h },
			controlPl: func(h *harness) *datasancev3.ControlPlane {
				return h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSClusterIP())
			},
			status:     func(cp *datasancev3.ControlPlane) datasancev3.ComponentStatus { return cp.Status.Nats.ComponentStatus },
			addressing: func(h *harness) { h.assignAddresses(); h.assignNatsAddress() }},
	}
	for _, comp := range components {
		for _, tc := range cases {
			t.Run(comp.name+"/"+tc.name, func(t *testing.T) {
				h := comp.harness(t)
				g := h.g
				secret := comp.ca
				if strings.HasPrefix(tc.name, "leaf") {
					secret = comp.leaf
				}
				ca, err := pki.GenerateCA(comp.ca, time.Now(), 0, pki.WithKeyGenerator(testKeyGenerator))
				g.Expect(err).NotTo(HaveOccurred())
				bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: secret}, Type: corev1.SecretTypeTLS, Data: tc.data(ca)}
				g.Expect(env.Client.Create(h.ctx, bad)).To(Succeed())
				h.create(comp.controlPl(h))
				h.mustRequeue(controlplane.RequeueTransition)

				var last error
				for range 3 {
					comp.addressing(h)
					_, last = h.reconcile()
				}
				g.Expect(last).To(HaveOccurred())
				g.Expect(errors.Is(last, reconcile.TerminalError(nil))).To(BeTrue(), "error: %v", last)
				st := comp.status(h.get())
				g.Expect(st.Reason).To(Equal(datasancev3.ReasonInvalidCertificate))
				g.Expect(st.Message).To(And(ContainSubstring(secret), ContainSubstring(tc.want)))
				g.Expect(h.trueCondition().Reason).To(Equal(datasancev3.ReasonInvalidCertificate))
				var warnings []string
				for _, e := range h.rec.list() {
					if strings.HasPrefix(e, "Warning InvalidCertificate") {
						warnings = append(warnings, e)
					}
				}
				g.Expect(warnings).To(HaveLen(1), "one Event per cause, over three failing passes")
				g.Expect(warnings[0]).To(ContainSubstring(st.Message))

				// The user deletes the Secret: the operator generates what is missing.
				g.Expect(env.Client.Delete(h.ctx, bad)).To(Succeed())
				for range 8 {
					comp.addressing(h)
					if res, err := h.reconcile(); err == nil && isReadyResult(res) {
						return
					}
				}
				t.Fatalf("not ready after the fix: %+v", h.get().Status)
			})
		}
	}
}

// registrationCalls are the calls that register something with the Controller (router, NATS
// hub, CAs), leaving out the status check and the login of a session.
func registrationCalls(calls []string) []string {
	var out []string
	for _, c := range calls {
		if c != "GET /api/v3/status" && c != "POST /api/v3/user/login" {
			out = append(out, c)
		}
	}
	return out
}

// certificateExpiry is the value of the expiry gauge for secret of the harness's ControlPlane.
func certificateExpiry(g Gomega, namespace, secret string) float64 {
	mfs, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, mf := range mfs {
		if mf.GetName() != "kubeopera_certificate_expiration_timestamp_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if metricLabels(m)["controlplane_namespace"] == namespace && metricLabels(m)["controlplane"] == cpName && metricLabels(m)["secret"] == secret {
				return m.GetGauge().GetValue()
			}
		}
	}
	g.Expect(secret).To(BeEmpty(), "no expiry series for Secret %s", secret)
	return 0
}

func metricLabels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
