package controlplane_test

import (
	"errors"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// Embedded login with the password from passwordSecretRef (it wins over the inline one).
func TestEmbeddedLoginWithPasswordSecret(t *testing.T) {
	h := newHarness(t)
	g := h.g
	h.createSecret("bootstrap", map[string]string{"password": fake.DefaultPassword})
	h.bringUp(h.controlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth.Bootstrap.Password = "inline-is-ignored"
		cp.Spec.Auth.Bootstrap.PasswordSecretRef = &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "bootstrap"}, Key: "password",
		}
	}))
	logins := h.api.RequestsTo("POST", "/api/v3/user/login")
	g.Expect(logins).NotTo(BeEmpty())
	for _, login := range logins { // one per pass that talks to the Controller
		g.Expect(login.Body).To(MatchJSON(`{"email":"admin","password":"fake-bootstrap-password"}`))
	}
	g.Expect(h.secret("controller-auth-credentials").Data).To(HaveKeyWithValue("auth-bootstrap-password", []byte(fake.DefaultPassword)))
	for _, e := range h.rec.list() {
		g.Expect(e).NotTo(ContainSubstring(fake.DefaultPassword), "no secret in Events")
	}
}

// External mode: OIDC discovery, then the client-credentials grant; the token is the bearer.
func TestExternalLogin(t *testing.T) {
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth = datasancev3.Auth{
			Mode:      datasancev3.AuthModeExternal,
			IssuerURL: h.api.IssuerURL(),
			Client:    &datasancev3.OIDCClient{ID: fake.DefaultClientID, Secret: fake.DefaultClientSecret},
		}
	}))
	g.Expect(h.api.Calls()[:4]).To(Equal([]string{
		"GET /api/v3/status",
		"GET /oidc/.well-known/openid-configuration",
		"POST /oidc/token",
		"GET /api/v3/certificates/ca/router-site-ca", // the router's CA, before its leaf
	}))
	token := h.api.RequestsTo("POST", "/oidc/token")[0]
	form, err := url.ParseQuery(string(token.Body))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(form).To(Equal(url.Values{
		"grant_type": {"client_credentials"}, "client_id": {fake.DefaultClientID}, "client_secret": {fake.DefaultClientSecret},
	}))
	g.Expect(h.api.RequestsTo("POST", "/api/v3/user/login")).To(BeEmpty())
	auth := h.secret("controller-auth-credentials").Data
	g.Expect(auth).To(HaveKeyWithValue("auth-mode", []byte("external")))
	g.Expect(auth).To(HaveKeyWithValue("auth-issuer-url", []byte(h.api.IssuerURL())))
	g.Expect(auth).To(HaveKeyWithValue("auth-client-secret", []byte(fake.DefaultClientSecret)))
	g.Expect(auth).To(HaveKeyWithValue("auth-bootstrap-password", BeEmpty()))
}

// Wrong credentials: the rejected login is tolerated (first-boot race), the registration that
// follows is refused, and the pass fails with LoginFailed (retried with backoff).
func TestWrongCredentials(t *testing.T) {
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth.Bootstrap.Password = "wrong-password"
	}))
	h.driveToAPI()
	h.api.Reset()
	_, err := h.reconcile()
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("invalid credentials"))
	g.Expect(err.Error()).NotTo(ContainSubstring("wrong-password"))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "credentials may be a first-boot race: retried")
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonLoginFailed)
	g.Expect(h.api.Calls()).To(Equal([]string{
		"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/certificates/ca/router-site-ca", "PUT /api/v3/router",
	}), "one session for the pass: the router's CA lookup and the registration are both refused")
	g.Expect(h.api.RequestsTo("PUT", "/api/v3/router")[0].Header.Get("Authorization")).To(BeEmpty())
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning LoginFailed")))
	g.Expect(h.get().Status.Controller.Reason).To(Equal(datasancev3.ReasonLoginFailed))
	g.Expect(h.get().Status.Router.Reason).To(Equal(datasancev3.ReasonLoginFailed))
	g.Expect(h.exists(&corev1.Secret{}, "router-site-ca")).To(BeFalse(), "no CA is made without asking the Controller")
}

// A missing passwordSecretRef Secret is SecretNotFound and a missing key SecretKeyNotFound, both
// terminal (the Secret watch brings the ControlPlane back; no backoff retries meanwhile); creating
// the Secret fixes it. A missing key of an optional reference falls back to the inline password.
func TestPasswordSecretMissing(t *testing.T) {
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth.Bootstrap.PasswordSecretRef = &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "bootstrap"}, Key: "password",
		}
	}))
	h.mustRequeue(controlplane.RequeueTransition)
	_, err := h.reconcile()
	g.Expect(err).To(MatchError(ContainSubstring(`secret bootstrap (spec.auth.bootstrap.passwordSecretRef) not found`)))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonSecretNotFound)
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning SecretNotFound")))
	g.Expect(h.exists(&corev1.Secret{}, "controller-auth-credentials")).To(BeFalse())

	h.createSecret("bootstrap", map[string]string{"other": "x"})
	_, err = h.reconcile()
	g.Expect(err).To(MatchError(ContainSubstring(`secret bootstrap has no key "password" (spec.auth.bootstrap.passwordSecretRef)`)))
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonSecretKeyNotFound)

	h.update(func(cp *datasancev3.ControlPlane) { cp.Spec.Auth.Bootstrap.PasswordSecretRef.Optional = ptr.To(true) })
	h.mustRequeue(controlplane.RequeueTransition)
	h.assignAddresses()
	_, err = h.reconcile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.secret("controller-auth-credentials").Data).To(HaveKeyWithValue("auth-bootstrap-password", []byte(fake.DefaultPassword)))
}

// createSecret creates an Opaque Secret the user owns.
func (h *harness) createSecret(name string, data map[string]string) *corev1.Secret {
	h.t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns}, StringData: data}
	h.g.Expect(env.Client.Create(h.ctx, s)).To(Succeed())
	return s
}

// driveToAPI runs passes (playing the cloud) until the next pass will register with the
// Controller API: the Deployment exists and every address is assigned. The router (and NATS) may
// have called the Controller already, for their CAs; a Controller the test made unusable fails
// those passes as it fails the registration, so their errors are not this helper's to judge.
func (h *harness) driveToAPI() {
	h.t.Helper()
	for range 6 {
		h.assignAddresses()
		if h.exists(&appsv1.Deployment{}, "controller") {
			return
		}
		_, _ = h.reconcile()
	}
	h.t.Fatal("the Controller Deployment was not created")
}
