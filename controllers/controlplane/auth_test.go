package controlplane_test

import (
	"crypto/tls"
	"errors"
	"net/url"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// Embedded login with the password from passwordSecretRef (it wins over the inline one).
func TestEmbeddedLoginWithPasswordSecret(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.createSecret("bootstrap", map[string]string{"password": fake.DefaultPassword})
	h.bringUp(h.controlPlane(testfixture.WithBootstrap(fake.DefaultUsername, "inline-is-ignored"),
		testfixture.WithBootstrapPasswordFrom("bootstrap", "password")))
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
	t.Parallel()
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

// External mode with an identity provider whose certificate comes from a private CA, while the
// Controller itself is served over plain http: nothing trusts that CA at first, so the login
// fails TLS verification before any credential is sent (LoginFailed, an error with backoff, the
// message naming spec.auth.caSecretRef). Once spec.auth.caSecretRef names a Secret holding the
// CA, the discovery document and the token endpoint verify, and the ControlPlane becomes ready
// with the provider's token.
func TestExternalIdentityProviderTrustedThroughAuthCASecret(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	idp, caPEM := h.startIdentityProvider()
	h.create(h.controlPlane(h.externalAuth(idp, nil)))
	h.driveToAPI()
	_, err := h.reconcile()
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "a renewed provider certificate is picked up by a retry")
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonLoginFailed)
	g.Expect(h.trueCondition().Message).To(And(
		ContainSubstring("identity provider's certificate at "+idp.IssuerURL()), ContainSubstring("spec.auth.caSecretRef")))
	g.Expect(idp.Calls()).To(BeEmpty(), "no request passed the handshake: the client secret never left")

	h.createSecret("idp-ca", map[string]string{"ca.crt": string(caPEM)})
	h.update(h.externalAuth(idp, secretRef("idp-ca", "ca.crt")))
	h.mustRequeue(controlplane.RequeueTransition)
	h.bringUpExisting()
	g.Expect(idp.Calls()).To(ContainElements(
		"GET "+fake.IdentityProviderIssuerPath+"/.well-known/openid-configuration",
		"POST "+fake.IdentityProviderIssuerPath+fake.IdentityProviderTokenPath))
	g.Expect(h.api.RequestsTo("POST", "/api/v3/user/login")).To(BeEmpty())
	g.Expect(h.api.Calls()).To(ContainElement("PUT /api/v3/router"), "registered with the provider's token")
}

// externalAuth switches a ControlPlane to external mode with idp as issuer, the Controller's
// client and caRef as spec.auth.caSecretRef.
func (h *harness) externalAuth(idp *fake.IdentityProvider, caRef *corev1.SecretKeySelector) func(*datasancev3.ControlPlane) {
	return func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth = datasancev3.Auth{
			Mode:        datasancev3.AuthModeExternal,
			IssuerURL:   idp.IssuerURL(),
			Client:      &datasancev3.OIDCClient{ID: fake.DefaultClientID, Secret: fake.DefaultClientSecret},
			CASecretRef: caRef,
		}
	}
}

// startIdentityProvider starts an external identity provider for the harness's Controller over
// HTTPS, with a certificate for 127.0.0.1 from a test CA that nothing trusts; it returns the
// provider and that CA's certificate (PEM).
func (h *harness) startIdentityProvider() (*fake.IdentityProvider, []byte) {
	h.t.Helper()
	now := time.Now()
	ca, err := pki.GenerateCA("idp-test-ca", now, 0, pki.WithKeyGenerator(testKeyGenerator))
	h.g.Expect(err).NotTo(HaveOccurred())
	leaf, err := pki.GenerateLeaf(ca, "idp", []string{"127.0.0.1"}, now, 0, pki.WithKeyGenerator(testKeyGenerator))
	h.g.Expect(err).NotTo(HaveOccurred())
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	h.g.Expect(err).NotTo(HaveOccurred())
	idp := fake.NewIdentityProvider(h.api, cert)
	h.t.Cleanup(idp.Close)
	h.idpCA = ca.CertPEM
	return idp, ca.CertPEM
}

// Wrong credentials: the rejected login is not followed by calls without a token (no CA lookup,
// no registration), and no CA is made without asking the Controller; the pass reports
// LoginFailed with a Warning Event, without an error (no backoff retries), and requeues for the
// one slow retry.
func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane(testfixture.WithBootstrap(fake.DefaultUsername, "wrong-password")))
	h.driveToAPI()
	h.mustRequeue(controlplane.LoginRetryInterval)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonLoginFailed)
	// The router asks the Controller for its CA in the pass its address arrives, so the one login
	// may come before the Deployment; every pass after it is held by the login gate (GET /status
	// only, which needs no token).
	g.Expect(h.api.RequestsTo("POST", "/api/v3/user/login")).To(HaveLen(1), "one login, however many passes")
	g.Expect(h.api.Calls()).To(HaveEach(BeElementOf("GET /api/v3/status", "POST /api/v3/user/login")),
		"after the refused login nothing is called without a token, not even the router's CA lookup")
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning LoginFailed")))
	g.Expect(h.rec.list()).NotTo(ContainElement(ContainSubstring("wrong-password")))
	cp := h.get()
	g.Expect(cp.Status.Controller.Reason).To(Equal(datasancev3.ReasonLoginFailed))
	g.Expect(cp.Status.Controller.Message).NotTo(ContainSubstring("wrong-password"))
	g.Expect(cp.Status.Router.Reason).To(Equal(datasancev3.ReasonLoginFailed), "the router waits for the Controller's answer on its CA")
	g.Expect(h.exists(&corev1.Secret{}, "router-site-ca")).To(BeFalse(), "no CA is made without asking the Controller")
}

// The Controller locks an account for 15 minutes after 5 failed logins, the bootstrap admin
// included. With a wrong password in the referenced Secret the operator logs in once, then only
// once per LoginRetryInterval and at most MaxRejectedLogins times in a row, however many passes
// run (watch events); after that the failure is terminal until the credentials change. The
// count is in the ControlPlane's status (the credentials only as an HMAC), so a restarted
// operator makes no login either: the Controller's own count never decays, and its fifth failure
// would lock the account. The account never locks, and fixing the Secret brings the ControlPlane
// to ready: the changed credentials are tried at once, no login fails again, and the count is
// gone from the status.
func TestRejectedLoginNeverLocksTheAccount(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.createSecret("bootstrap", map[string]string{"password": "wrong-password"})
	h.create(h.controlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth.Bootstrap.PasswordSecretRef = &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "bootstrap"}, Key: "password",
		}
	}))
	h.driveToAPI()
	logins := func() int { return len(h.api.RequestsTo("POST", "/api/v3/user/login")) }
	for attempt := 1; attempt <= controlplane.MaxRejectedLogins; attempt++ {
		last := attempt == controlplane.MaxRejectedLogins
		for pass := range 6 {
			res, err := h.reconcile()
			if last {
				// The retries are spent: terminal until the credentials change.
				g.Expect(err).To(MatchError(ContainSubstring("invalid credentials")))
				g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
			} else {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.RequeueAfter).To(BeNumerically(">", time.Minute), "pass %d: a slow retry, not a hot loop", pass)
			}
			h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonLoginFailed)
		}
		g.Expect(logins()).To(Equal(attempt), "one login per retry interval")
		g.Expect(h.api.FailedLogins(fake.DefaultUsername)).To(Equal(attempt))
		h.clock.SetTime(h.clock.Now().Add(controlplane.LoginRetryInterval - time.Second))
		_, _ = h.reconcile()
		g.Expect(logins()).To(Equal(attempt), "no retry before the interval")
		h.clock.SetTime(h.clock.Now().Add(time.Second))
	}
	// However much time passes, no login.
	for range 3 {
		_, err := h.reconcile()
		g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
		h.clock.SetTime(h.clock.Now().Add(controlplane.LoginRetryInterval))
	}
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonLoginFailed)
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning LoginFailed")))
	g.Expect(logins()).To(Equal(controlplane.MaxRejectedLogins))
	g.Expect(h.api.Locked(fake.DefaultUsername)).To(BeFalse(), "the operator never locks the account")
	rejected := h.get().Status.Controller.RejectedLogins
	g.Expect(rejected).NotTo(BeNil())
	g.Expect(rejected.Count).To(BeEquivalentTo(controlplane.MaxRejectedLogins))
	g.Expect(rejected.Credentials).To(MatchRegexp(`^[0-9a-f]{64}$`), "an HMAC, not the credentials")

	// A new operator process remembers nothing but the status: still no login, however much
	// time passes.
	h.restartOperator()
	for range 3 {
		_, err := h.reconcile()
		g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error: %v", err)
		h.clock.SetTime(h.clock.Now().Add(controlplane.LoginRetryInterval))
	}
	g.Expect(logins()).To(Equal(controlplane.MaxRejectedLogins), "no login after the restart")
	g.Expect(h.api.FailedLogins(fake.DefaultUsername)).To(Equal(controlplane.MaxRejectedLogins))

	sec := &corev1.Secret{}
	g.Expect(env.Client.Get(h.ctx, h.key("bootstrap"), sec)).To(Succeed())
	sec.Data["password"] = []byte(fake.DefaultPassword)
	g.Expect(env.Client.Update(h.ctx, sec)).To(Succeed())
	// The changed credentials are tried at once: the next pass logs in, and the router, whose CA
	// lookup the refused login held, issues its certificates and creates its Deployment, whose
	// rollout the pass waits for.
	h.rollOut()
	g.Expect(logins()).To(Equal(controlplane.MaxRejectedLogins+1), "changed credentials are tried once, at once")
	// Once the pods run, the next pass registers with the Controller in a session of its own,
	// with its own login.
	h.mustBeReady()
	g.Expect(logins()).To(Equal(controlplane.MaxRejectedLogins + 2))
	g.Expect(h.api.FailedLogins(fake.DefaultUsername)).To(BeZero())
	g.Expect(h.get().Status.Controller.RejectedLogins).To(BeNil())
}

// A missing passwordSecretRef Secret is SecretNotFound and a missing key SecretKeyNotFound, both
// terminal (the Secret watch brings the ControlPlane back; no backoff retries meanwhile); creating
// the Secret fixes it. A missing key of an optional reference falls back to the inline password.
func TestPasswordSecretMissing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane(testfixture.WithBootstrapPasswordFrom("bootstrap", "password")))
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
