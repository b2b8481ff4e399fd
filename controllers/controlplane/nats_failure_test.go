package controlplane_test

import (
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

const bootstrapRoute = "GET /api/v3/nats/bootstrap"

// A failing bootstrap (403 while the Controller is not the Kubernetes control plane, 404 while
// its NATS Secrets are missing, 500) is waited for: requeue with NatsBootstrapFailed, nothing
// NATS written; once it answers, the install completes.
func TestNatsBootstrapFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		fail   func(*fake.Server)
		status string
	}{
		{"403 not the Kubernetes control plane", func(s *fake.Server) {
			s.FailAlways(bootstrapRoute, fake.Failure{Status: http.StatusForbidden,
				Message: "NATS bootstrap is only available when the Controller runs on the Kubernetes control plane"})
		}, "HTTP 403 ForbiddenError"},
		{"404 Controller Secret missing", func(s *fake.Server) { s.SetBootstrapSecretMissing("nats-operator-seed") }, "HTTP 404 NotFoundError"},
		{"500", func(s *fake.Server) {
			s.FailAlways(bootstrapRoute, fake.Failure{Status: http.StatusInternalServerError})
		}, "HTTP 500"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newNatsHarness(t)
			g := h.g
			tc.fail(h.api)
			h.create(h.controlPlane(testfixture.WithNATS()))
			h.mustRequeue(controlplane.RequeueTransition)
			// Let the Controller component get as far as it can: it registers the router and its
			// CAs, then waits for the NATS CA Secrets, which NATS creates only after its bootstrap.
			waitingForNatsCA := func() bool {
				st := h.get().Status.Controller
				return st.Reason == datasancev3.ReasonProgressing && strings.Contains(st.Message, "nats-site-ca")
			}
			for range 4 {
				h.assignAddresses()
				if waitingForNatsCA() {
					break
				}
				_, err := h.reconcile()
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(waitingForNatsCA()).To(BeTrue(), "controller status: %+v", h.get().Status.Controller)
			g.Expect(h.api.ImportedCAs()).To(ConsistOf("router-site-ca", "default-router-local-ca"),
				"a NATS CA was imported before its Secret existed")
			h.mustRequeue(controlplane.RequeueNatsBootstrap)
			h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonNatsBootstrapFailed)
			st := h.get().Status.Nats
			g.Expect(st.Ready).To(BeFalse())
			g.Expect(st.Reason).To(Equal(datasancev3.ReasonNatsBootstrapFailed))
			g.Expect(st.Message).To(ContainSubstring(tc.status))
			g.Expect(h.exists(&corev1.Secret{}, "nats-operator-seed")).To(BeFalse())
			g.Expect(h.exists(&appsv1.StatefulSet{}, "nats")).To(BeFalse())
			g.Expect(h.exists(&corev1.Service{}, "nats")).To(BeFalse())

			h.api.ClearFailures()
			h.api.SetBootstrapSecretMissing("")
			for range 3 {
				h.finishRollouts()
				h.assignNatsAddress()
				if res, err := h.reconcile(); err == nil && isReadyResult(res) {
					break
				}
			}
			h.expectState(datasancev3.ConditionReady, datasancev3.ReasonReconciled)
			g.Expect(h.exists(&appsv1.StatefulSet{}, "nats")).To(BeTrue())
		})
	}
}

// The Controller not answering at all is ControllerUnavailable, requeued after 3 s.
func TestNatsControllerDown(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.api.FailAlways("GET /api/v3/status", fake.Failure{Status: http.StatusServiceUnavailable})
	h.create(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSClusterIP(), func(cp *datasancev3.ControlPlane) {
		cp.Spec.Controller.PublicURL = "https://iofog.example.com"
		cp.Spec.Services.Router = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
		cp.Spec.Ingresses.Router = &datasancev3.RouterIngress{Address: "router.example.com"}
	}))
	h.mustRequeue(controlplane.RequeueTransition)
	// The Controller Deployment was just created (5 s); NATS finds the Controller unavailable and
	// asks again sooner (3 s).
	h.mustRequeue(controlplane.RequeueControllerStatus)
	g.Expect(h.get().Status.Nats.Reason).To(Equal(datasancev3.ReasonControllerUnavailable))
	// The Deployments roll out, and the Controller still does not answer.
	h.finishRollouts()
	h.mustRequeue(controlplane.RequeueControllerStatus)
	g.Expect(h.get().Status.Controller.Reason).To(Equal(datasancev3.ReasonControllerUnavailable))
	g.Expect(h.get().Status.Nats.Reason).To(Equal(datasancev3.ReasonControllerUnavailable))
	g.Expect(h.api.RequestsTo("GET", "/api/v3/nats/bootstrap")).To(BeEmpty())
}

// A failed hub upsert is retried after 10 s (docs/controlplane.md#controller-reconcile-steps 5b) and then succeeds.
func TestNatsHubUpsertFailure(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.api.FailNext("PUT /api/v3/nats/hub", fake.Failure{Status: http.StatusInternalServerError})
	h.create(h.controlPlane(testfixture.WithNATS()))
	h.mustRequeue(controlplane.RequeueTransition)
	h.mustRequeue(controlplane.RequeueLoadBalancer)
	h.setServiceAddress("router", routerLBIP)
	h.setServiceAddress("controller", h.controllerLB)
	h.setServiceAddress("nats", natsLBIP)
	h.mustRequeue(controlplane.RequeueDeploymentCreated)

	// The rollouts finish: the Controller answers, and the hub upsert fails.
	h.finishRollouts()
	h.mustRequeue(controlplane.RequeueRegistration)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonRegistrationFailed)
	_, registered := h.api.Hub()
	g.Expect(registered).To(BeFalse())

	h.mustBeReady()
	hub, registered := h.api.Hub()
	g.Expect(registered).To(BeTrue())
	g.Expect(hub.Host).To(Equal(natsLBIP))
	g.Expect(h.api.RequestsTo("PUT", "/api/v3/nats/hub")).To(HaveLen(2))
}

// A brought CA signs the server certificate and is never changed; an invalid one is
// InvalidCertificate, terminal, with a Warning Event.
func TestNatsBringYourOwnCA(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	ca, err := pki.GenerateCA("my-nats-site-ca", natsClock, 0)
	g.Expect(err).NotTo(HaveOccurred())
	byo := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "nats-site-ca"},
		Type:       corev1.SecretTypeTLS,
		Data:       pki.SecretData(ca, nil),
	}
	g.Expect(env.Client.Create(h.ctx, byo)).To(Succeed())
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	g.Expect(h.certificate("nats-site-server").Issuer.CommonName).To(Equal("my-nats-site-ca"))
	g.Expect(h.secret("nats-site-server").Data["ca.crt"]).To(Equal(ca.CertPEM))
	g.Expect(h.secret("nats-site-ca").ResourceVersion).To(Equal(byo.ResourceVersion))
	g.Expect(h.secret("nats-site-ca").OwnerReferences).To(BeEmpty(), "a brought CA is not adopted")

	bad, _ := newNatsHarness(t)
	g.Expect(env.Client.Create(bad.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: bad.ns, Name: "default-nats-local-ca"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": []byte("not PEM"), "tls.key": []byte("not PEM")},
	})).To(Succeed())
	bad.create(bad.controlPlane(testfixture.WithNATS(), testfixture.WithNATSClusterIP()))
	bad.mustRequeue(controlplane.RequeueTransition)
	_, err = bad.reconcile()
	g.Expect(err).To(HaveOccurred())
	g.Expect(bad.get().Status.Nats.Reason).To(Equal(datasancev3.ReasonInvalidCertificate))
	g.Expect(bad.get().Status.Nats.Message).To(ContainSubstring("default-nats-local-ca"))
	g.Expect(bad.rec.list()).To(ContainElement(HavePrefix("Warning InvalidCertificate")))
	g.Expect(bad.exists(&appsv1.StatefulSet{}, "nats")).To(BeFalse())
}

// Each TLS Secret is checked on its own: a deleted server Secret is regenerated while the other
// is kept; a brought server certificate (no replica annotation) survives a replica change.
func TestNatsServerSecretsIndependent(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2)))
	site := h.secret("nats-site-server")
	g.Expect(env.Client.Delete(h.ctx, h.secret("nats-mqtt-server"))).To(Succeed())

	h.mustBeReady() // a ready pass repairs the deleted Secret
	g.Expect(h.secret("nats-site-server").ResourceVersion).To(Equal(site.ResourceVersion))
	g.Expect(h.certificate("nats-mqtt-server").Issuer.CommonName).To(Equal("default-nats-local-ca"))

	// Replace the MQTT certificate with a brought one: it has no replica annotation.
	mqtt := h.secret("nats-mqtt-server")
	g.Expect(env.Client.Delete(h.ctx, mqtt)).To(Succeed())
	byo := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "nats-mqtt-server"},
		Type:       corev1.SecretTypeTLS,
		Data:       mqtt.Data,
	}
	g.Expect(env.Client.Create(h.ctx, byo)).To(Succeed())
	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To(int32(3)) })
	g.Expect(h.secret("nats-mqtt-server").UID).To(Equal(byo.UID), "a brought server certificate is not rotated")
	g.Expect(h.secret("nats-site-server").Annotations).To(HaveKeyWithValue(controlplane.AnnotationNatsReplicas, "3"))
}
