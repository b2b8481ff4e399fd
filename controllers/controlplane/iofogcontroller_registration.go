package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/routerconf"
)

// registration is what the operator tells the Controller REST API, and where.
type registration struct {
	BaseURL string         `json:"baseURL"`
	Router  iofog.Router   `json:"router"`
	Hub     *iofog.NatsHub `json:"hub,omitempty"`
	CAs     []string       `json:"cas"`
}

// hash identifies the registration in resources.AnnotationRegistration.
func (g registration) hash() string {
	b, err := json.Marshal(g)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// registerWithIoFogController runs docs/controlplane.md#controller-reconcile-steps steps 4-6 against the Controller REST API: GET /status,
// login, PUT /router, PUT /nats/hub (NATS only), the CA imports, and the external reachability
// check. On a ready ControlPlane whose registration is unchanged it calls nothing, except one
// GET /status per Options.ControllerVerifyInterval (docs/controlplane.md#controller-restarts): a
// Controller process not seen before (a restarted or new pod; any pod may answer) is asked
// whether it still holds the registration (readBackRegistration), and only a Controller that
// lost it is registered again.
func (r *Reconciler) registerWithIoFogController(ctx context.Context, s *scope, lbAddress string) error {
	reg, err := r.desiredRegistration(ctx, s)
	if err != nil {
		return err
	}
	hash := reg.hash()
	if s.steady && s.cp.Annotations[resources.AnnotationRegistration] == hash {
		// A CA Secret that changed was compared with the Controller's copy by its component.
		if !r.registered.due(s.cp, s.now, r.Options.controllerVerifyInterval()) {
			return nil
		}
		cs, err := r.controllerStatus(ctx, s)
		if err != nil {
			return err
		}
		if r.registered.knownProcess(s.cp, cs.status, s.now) {
			return nil
		}
		held, err := r.readBackRegistration(ctx, s, reg)
		if err != nil {
			return err
		}
		if held {
			r.registered.record(s.cp, cs.status, s.now)
			return nil
		}
		ctrl.LoggerFrom(ctx).Info("The Controller lost the registration (a process restarted on an empty database); registering again",
			"uptimeSec", cs.status.UptimeSec)
	}

	cs, err := r.controllerSession(ctx, s)
	if err != nil {
		return err
	}
	if err := r.register(ctx, s, cs, reg); err != nil {
		// A registration that stopped part-way leaves the Controller holding some of reg: the
		// annotation no longer claims all of it, so the next pass registers in full and meets
		// the same failure, instead of a read-back that compares the router and hub only.
		delete(s.cp.Annotations, resources.AnnotationRegistration)
		return err
	}
	if err := r.checkExternalReachability(ctx, s, lbAddress); err != nil {
		return err
	}
	if s.cp.Annotations == nil {
		s.cp.Annotations = map[string]string{}
	}
	s.cp.Annotations[resources.AnnotationRegistration] = hash
	r.registered.record(s.cp, cs.status, s.now)
	return nil
}

// register tells the Controller reg: PUT /router, PUT /nats/hub (NATS only) and the CA step
// (importCAs).
func (r *Reconciler) register(ctx context.Context, s *scope, cs *controllerSession, reg registration) error {
	if err := cs.api.PutDefaultRouter(ctx, reg.Router); err != nil {
		return registrationFailure(ctx, err, cs.loginRejected)
	}
	if reg.Hub != nil {
		if err := cs.api.UpsertNatsHub(ctx, *reg.Hub); err != nil {
			return registrationFailure(ctx, err, cs.loginRejected)
		}
	}
	return r.importCAs(ctx, s, reg.CAs)
}

// readBackRegistration asks the Controller whether it still holds reg: GET /router, and
// GET /nats/hub when a hub is registered, compared with what was registered (the JetStream sizes
// are not echoed). A 404 means it does not. The CAs are not read: they live in the same
// database, and a Controller that lost it lost the router too. Costs a login, once per
// Controller process (registrations).
func (r *Reconciler) readBackRegistration(ctx context.Context, s *scope, reg registration) (bool, error) {
	cs, err := r.controllerSession(ctx, s)
	if err != nil {
		return false, err
	}
	router, err := cs.api.GetDefaultRouter(ctx)
	if errors.Is(err, iofog.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, registrationFailure(ctx, err, cs.loginRejected)
	}
	if *router != reg.Router {
		return false, nil
	}
	if reg.Hub == nil {
		return true, nil
	}
	hub, err := cs.api.GetNatsHub(ctx)
	if errors.Is(err, iofog.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, registrationFailure(ctx, err, cs.loginRejected)
	}
	want := *reg.Hub
	want.JsStorageSize, want.JsMemoryStoreSize = "", ""
	return *hub == want, nil
}

// desiredRegistration computes what to register: the default router (docs/controlplane.md#router-registration), the NATS hub
// (NATS only, docs/controlplane.md#hub-registration-and-ca-import) and the CAs to import. It requeues while the router LoadBalancer has no
// address, and fails when a non-LoadBalancer router has no ingress address.
func (r *Reconciler) desiredRegistration(ctx context.Context, s *scope) (registration, error) {
	host, err := r.routerAddress(ctx, s)
	if err != nil {
		return registration{}, err
	}
	reg := registration{
		BaseURL: internalControllerURL(r.Options.ControllerEndpointTemplate, s.cp),
		Router:  routerRegistration(s.spec, host),
		CAs:     append([]string(nil), resources.RouterCASecretNames...),
	}
	if s.natsEnabled() {
		hub, err := r.natsHubRegistration(ctx, s)
		if err != nil {
			return registration{}, err
		}
		reg.Hub = hub
		reg.CAs = append(reg.CAs, resources.NatsCASecretNames()...)
	}
	return reg, nil
}

// login authenticates the client (docs/controlplane.md#login): the bootstrap user at POST /user/login in embedded
// mode, the OAuth2 client-credentials grant at the issuer's token endpoint in external mode.
//
// Rejected credentials are never hammered: the Controller locks the account after 5 wrong
// passwords for 15 minutes, the bootstrap admin included (docs/controlplane.md#login-lockout). A
// rejection is remembered (s.r.logins) against the credentials tried, and while they stay the same
// the pass makes no login: it reports LoginFailed and requeues for one slow retry per
// loginRetryInterval, as long as fewer than maxRejectedLogins logins in a row were rejected;
// after that it is terminal until the credentials change (spec or the referenced Secret, both
// watched). Changed credentials are tried once, at once.
func (r *Reconciler) login(ctx context.Context, s *scope, api ControllerAPI, resolved *datasancev3.ControlPlaneSpec) (rejected bool, err error) {
	key, err := r.rolloutKey(ctx, s)
	if err != nil {
		return false, err
	}
	creds := credentialsFingerprint(key, s.spec, resolved)
	if wait, held := r.logins.held(s.cp, creds, s.now); held {
		return false, loginRefused(wait)
	}
	var token string
	switch s.spec.Auth.Mode {
	case datasancev3.AuthModeExternal:
		var id, secret string
		if c := resolved.Auth.Client; c != nil {
			id, secret = c.ID, c.Secret
		}
		token, err = api.LoginClientCredentials(ctx, s.spec.Auth.IssuerURL, id, secret)
	default:
		var username string
		if b := s.spec.Auth.Bootstrap; b != nil {
			username = b.Username
		}
		var tokens *iofog.Tokens
		if tokens, err = api.Login(ctx, username, bootstrapPassword(resolved)); err == nil {
			token = tokens.AccessToken
		}
	}
	switch {
	case err == nil:
		r.logins.succeeded(s.cp)
		api.SetToken(token)
		return false, nil
	case errors.Is(err, iofog.ErrInvalidCredentials):
		n := r.logins.rejected(s.cp, creds, s.now)
		ctrl.LoggerFrom(ctx).Info("The Controller rejected the operator's credentials; not logging in again until they change",
			"mode", s.spec.Auth.Mode, "rejectedInARow", n)
		wait, _ := r.logins.held(s.cp, creds, s.now)
		refused := loginRefused(wait)
		// One Warning Event per rejected login (at most maxRejectedLogins in a row), not per pass.
		r.event(s.cp, corev1.EventTypeWarning, datasancev3.ReasonLoginFailed, refused.Error())
		s.announce(refused.Error())
		return true, refused
	case s.spec.Auth.Mode == datasancev3.AuthModeExternal && isCertificateMismatch(err):
		return false, identityProviderCertificateInvalid(s.spec.Auth.IssuerURL, err)
	case iofog.IsRetryable(err):
		ctrl.LoggerFrom(ctx).Info("Logging in to the Controller failed", "cause", iofog.Cause(err), "error", err.Error())
		// The Controller did not answer the login properly (down, 5xx, garbage, timeout): it is
		// unavailable, which retrying fixes; LoginFailed is kept for credentials a person must fix.
		return false, outcome.Wait(datasancev3.ReasonControllerUnavailable, requeueControllerStatus,
			fmt.Sprintf("Logging in to the Controller failed (%s).", iofog.Cause(err)))
	default:
		return false, outcome.Retry(datasancev3.ReasonLoginFailed, fmt.Errorf("log in to the Controller: %w", err))
	}
}

func isCertificateMismatch(err error) bool {
	_, ok := iofog.AsCertificateMismatch(err)
	return ok
}

// identityProviderCertificateInvalid is the LoginFailed error of an identity provider whose
// certificate does not verify: it names the issuer, the certificate's names and where its CA
// goes (spec.auth.caSecretRef). An error, so retried with backoff: the provider may renew its
// certificate without any event here, and the CA Secret is watched.
func identityProviderCertificateInvalid(issuer string, err error) error {
	m, _ := iofog.AsCertificateMismatch(err)
	names := "no names"
	if len(m.Names) > 0 {
		names = strings.Join(m.Names, ", ")
	}
	if m.UnknownAuthority {
		return outcome.Retry(datasancev3.ReasonLoginFailed, fmt.Errorf(
			"the identity provider's certificate at %s (names: %s) is not signed by a trusted CA: reference its CA with spec.auth.caSecretRef",
			issuer, names))
	}
	return outcome.Retry(datasancev3.ReasonLoginFailed, fmt.Errorf(
		"the identity provider's certificate at %s does not cover %s (names: %s)", issuer, m.Host, names))
}

// loginRefused is the outcome of a pass whose credentials the Controller rejected: a requeue
// with reason LoginFailed until the next slow retry (wait), or, when no retry is left (wait 0), a
// terminal LoginFailed error. The message is the same for every pass of one state.
func loginRefused(wait time.Duration) error {
	if wait > 0 {
		return outcome.Wait(datasancev3.ReasonLoginFailed, wait, fmt.Sprintf(
			"The Controller rejected the operator's credentials (invalid credentials): fix spec.auth or the Secret it references; "+
				"until they change the operator logs in again only every %s, at most %d times in a row.",
			loginRetryInterval, maxRejectedLogins))
	}
	return outcome.Stop(datasancev3.ReasonLoginFailed, fmt.Errorf(
		"the Controller rejected the operator's credentials (invalid credentials) %d times in a row: fix spec.auth or the Secret it references; "+
			"the operator does not log in again until they change (the Controller locks the account after 5 failures)", maxRejectedLogins))
}

// registrationFailure classifies a failed registration call: refused because the login was
// rejected → LoginFailed error; transient (Controller down, 5xx, garbage, timeout) → requeue
// after requeueRegistration with a message stable for the cause (the detail is logged);
// otherwise a RegistrationFailed error.
func registrationFailure(ctx context.Context, err error, loginRejected bool) error {
	var apiErr *iofog.APIError
	if loginRejected && errors.As(err, &apiErr) &&
		(apiErr.StatusCode == http.StatusUnauthorized || apiErr.StatusCode == http.StatusForbidden) {
		return outcome.Retry(datasancev3.ReasonLoginFailed,
			fmt.Errorf("the Controller rejected the operator's credentials (invalid credentials): %w", err))
	}
	if iofog.IsRetryable(err) {
		ctrl.LoggerFrom(ctx).Info("Registering with the Controller failed", "cause", iofog.Cause(err), "error", err.Error())
		what := "request"
		if errors.As(err, &apiErr) {
			what = apiErr.Method + " " + apiErr.Path
		}
		return outcome.Wait(datasancev3.ReasonRegistrationFailed, requeueRegistration,
			fmt.Sprintf("Registering with the Controller failed: %s (%s).", what, iofog.Cause(err)))
	}
	return outcome.Retry(datasancev3.ReasonRegistrationFailed, err)
}

// checkExternalReachability is docs/controlplane.md#controller-reconcile-steps step 6: a LoadBalancer Controller must answer GET /status
// on its LoadBalancer address; an Ingress-exposed one needs an Ingress with load-balancer status.
// Other exposures are not checked. Over https the check dials the LoadBalancer address and
// verifies the certificate, with the ControlPlane's trust, against the name external clients use:
// the host of the public URL (spec.controller.publicUrl, or the LoadBalancer address when the URL
// is derived from it). A certificate that does not cover that name is ControllerCertificateInvalid.
func (r *Reconciler) checkExternalReachability(ctx context.Context, s *scope, lbAddress string) error {
	switch {
	case datasancev3.ServiceType(s.spec.Services.Controller) == corev1.ServiceTypeLoadBalancer:
		if lbAddress == "" {
			return outcome.Wait(datasancev3.ReasonWaitingForLoadBalancer, requeueLoadBalancer,
				"Waiting for a LoadBalancer address of Service controller.")
		}
		ep := ControllerEndpoint{BaseURL: resources.ControllerScheme(s.spec) + "://" + net.JoinHostPort(lbAddress, strconv.Itoa(resources.ControllerAPIPort))}
		if name := hostOfURL(s.cp.Status.Controller.PublicURL); s.spec.ControllerHTTPS() && name != "" && name != lbAddress {
			ep.ServerNames = []string{name}
		}
		api, err := r.controllerClient(ctx, s, ep)
		if err != nil {
			return err
		}
		if _, err := api.Status(ctx); err != nil {
			return s.controllerCallFailed(ctx, err, ep.BaseURL, ep.ServerNames,
				fmt.Sprintf("The Controller is not reachable through its LoadBalancer at %s", ep.BaseURL))
		}
	case s.spec.ControllerIngressMode():
		ing := &networkingv1.Ingress{}
		found, err := r.getExisting(ctx, s, resources.ControllerName, ing)
		if err != nil {
			return err
		}
		if !found || len(ing.Status.LoadBalancer.Ingress) == 0 {
			return outcome.Wait(datasancev3.ReasonIngressNotReady, requeueLoadBalancer,
				"No LoadBalancer ingress found for Ingress resource controller yet.")
		}
	}
	return nil
}

// routerRegistration is the PUT /router body (docs/controlplane.md#router-registration): the fixed listener ports on the
// LoadBalancer path; spec.ingresses.router ports on the ingress path, 0 meaning the default
// (docs/controlplane.md#router-ingress-ports-of-0).
func routerRegistration(spec *datasancev3.ControlPlaneSpec, host string) iofog.Router {
	r := iofog.Router{Host: host, MessagingPort: routerconf.AMQPSPort, InterRouterPort: routerconf.InterRouterPort, EdgeRouterPort: routerconf.EdgePort}
	if datasancev3.ServiceType(spec.Services.Router) == corev1.ServiceTypeLoadBalancer || spec.Ingresses.Router == nil {
		return r
	}
	in := spec.Ingresses.Router
	r.MessagingPort = portOr(in.MessagePort, routerconf.AMQPSPort)
	r.InterRouterPort = portOr(in.InteriorPort, routerconf.InterRouterPort)
	r.EdgeRouterPort = portOr(in.EdgePort, routerconf.EdgePort)
	return r
}

func portOr(p, def int32) int {
	if p == 0 {
		return int(def)
	}
	return int(p)
}
