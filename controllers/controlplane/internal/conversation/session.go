package conversation

import (
	"context"
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// Peer is what a Session asks of the Kubernetes side of the pass, and only when the pass first
// needs the Controller: a pass that calls nothing reads nothing. The ControlPlane reconciler
// implements it; every method may read Kubernetes objects, the Session never does.
type Peer interface {
	// Endpoint is where the in-cluster Controller API is and whom to trust for it (the
	// Controller's CA bundle over https, the identity provider's in external mode).
	Endpoint(ctx context.Context) (Endpoint, error)
	// HoldLogin returns an error (a wait) while a login must not be tried, nil otherwise.
	HoldLogin() error
	// Credentials are the credentials the login sends, resolved, with their fingerprint.
	Credentials(ctx context.Context) (Credentials, error)
	// LoginRejected is told, once per rejected login, the error every caller of the Session
	// gets for it, so the reconciler can say so on the ControlPlane (an Event).
	LoginRejected(refused error)
}

// Credentials are what a login sends (docs/controlplane.md#login).
type Credentials struct {
	// Fingerprint identifies the credentials without revealing them: a change of the spec or
	// of a referenced Secret changes it, a retry of the same values does not (the login gate).
	Fingerprint string
	// Username and Password log in the bootstrap user (embedded mode).
	Username, Password string
	// ClientID and ClientSecret are the OAuth2 client of the client-credentials grant (external
	// mode).
	ClientID, ClientSecret string
}

// Config is what a Session is made of.
type Config struct {
	// ControlPlane is the object of the pass; the Session reads its spec and writes
	// status.controller.rejectedLogins in memory only.
	ControlPlane *datasancev3.ControlPlane
	// Now is the pass's clock reading.
	Now time.Time
	// VerifyInterval is how often a ready ControlPlane's registration is verified.
	VerifyInterval time.Duration
	// NewClient builds the Controller clients.
	NewClient ClientFactory
	// Memory is the reconciler's long-lived memory of the Controllers.
	Memory *Memory
	// Peer answers what the Session needs from Kubernetes.
	Peer Peer
}

// Session is one pass's conversation with a ControlPlane's Controller: one client, one GET
// /status, at most one login, shared by every component of the pass. A failure is remembered
// too, so the next component that asks gets it without another call. It also keeps the pass's
// outcome of comparing each CA with the Controller's copy (CAOutcome). Close releases the
// connections of every client it made.
type Session struct {
	cp             *datasancev3.ControlPlane
	now            time.Time
	verifyInterval time.Duration
	newClient      ClientFactory
	mem            *Memory
	peer           Peer

	api API
	ep  Endpoint
	// status is the answer of GET /status.
	status *iofog.ControllerStatus
	// opened: the client exists and /status answered (or did not: openErr).
	opened        bool
	openErr       error
	loggedIn      bool
	loginRejected bool
	// loginErr is the login's outcome for every component that asks (nil: logged in).
	loginErr error
	// caChecks holds the outcome of comparing each CA with the Controller's copy in this pass.
	caChecks         map[string]error
	closeConnections []func()
}

// NewSession returns the Session of one pass. It calls nothing and asks the peer nothing.
func NewSession(c Config) *Session {
	return &Session{cp: c.ControlPlane, now: c.Now, verifyInterval: c.VerifyInterval,
		newClient: c.NewClient, mem: c.Memory, peer: c.Peer}
}

// Close releases the connections of every client the Session made.
func (s *Session) Close() {
	for _, f := range s.closeConnections {
		f()
	}
	s.closeConnections = nil
}

// open makes the pass's client and asks GET /status, once per pass. Failures are a requeue
// (Controller unavailable, 3 s) or an error (certificate invalid, bad trust input).
func (s *Session) open(ctx context.Context) error {
	if s.opened {
		return s.openErr
	}
	s.opened = true
	ep, err := s.peer.Endpoint(ctx)
	if err != nil {
		s.openErr = err
		return err
	}
	s.ep = ep
	api, err := s.client(ep)
	if err != nil {
		s.openErr = err
		return err
	}
	s.api = api
	st, err := api.Status(ctx)
	if err != nil {
		s.openErr = s.callFailed(ctx, err, ep, fmt.Sprintf("The Controller API at %s is not available", ep.BaseURL))
		return s.openErr
	}
	s.status = st
	return nil
}

// client builds a client for ep, closed with the Session.
func (s *Session) client(ep Endpoint) (API, error) {
	api, err := s.newClient(ep)
	if err != nil {
		return nil, outcome.Retry(datasancev3.ReasonControllerUnavailable, err)
	}
	s.closeConnections = append(s.closeConnections, api.CloseIdleConnections)
	return api, nil
}

// loggedInClient returns the pass's client after GET /status and the login
// (docs/controlplane.md#login). Rejected credentials end the pass's use of the Controller: the
// result is the login's LoginFailed requeue (or terminal error) for every component that asks,
// so nothing is called without a token, no CA is compared or imported, and the login gate
// (docs/controlplane.md#login-lockout) decides when the next login is tried.
func (s *Session) loggedInClient(ctx context.Context) (API, error) {
	if err := s.open(ctx); err != nil {
		return nil, err
	}
	if s.loggedIn {
		return s.api, s.loginErr
	}
	s.loggedIn = true
	if err := s.peer.HoldLogin(); err != nil {
		s.loginErr = err
		return s.api, err
	}
	s.loginErr = s.login(ctx)
	return s.api, s.loginErr
}

// login authenticates the client (docs/controlplane.md#login): the bootstrap user at POST
// /user/login in embedded mode, the OAuth2 client-credentials grant at the issuer's token
// endpoint in external mode.
//
// Rejected credentials are never hammered: the Controller locks the account after 5 wrong
// passwords for 15 minutes, the bootstrap admin included (docs/controlplane.md#login-lockout). A
// rejection is remembered (Memory) against the credentials tried, and while they stay the same
// the pass makes no login: it reports LoginFailed and requeues for one slow retry per
// LoginRetryInterval, as long as fewer than MaxRejectedLogins logins in a row were rejected;
// after that it is terminal until the credentials change (spec or the referenced Secret, both
// watched). Changed credentials are tried once, at once.
func (s *Session) login(ctx context.Context) error {
	creds, err := s.peer.Credentials(ctx)
	if err != nil {
		return err
	}
	spec := &s.cp.Spec
	gate := &s.mem.logins
	if wait, held := gate.held(s.cp, creds.Fingerprint, s.now); held {
		return loginRefused(wait)
	}
	var token string
	switch spec.Auth.Mode {
	case datasancev3.AuthModeExternal:
		token, err = s.api.LoginClientCredentials(ctx, spec.Auth.IssuerURL, creds.ClientID, creds.ClientSecret)
	default:
		var tokens *iofog.Tokens
		if tokens, err = s.api.Login(ctx, creds.Username, creds.Password); err == nil {
			token = tokens.AccessToken
		}
	}
	switch {
	case err == nil:
		gate.succeeded(s.cp)
		s.api.SetToken(token)
		return nil
	case errors.Is(err, iofog.ErrInvalidCredentials):
		n := gate.rejected(s.cp, creds.Fingerprint, s.now)
		ctrl.LoggerFrom(ctx).Info("The Controller rejected the operator's credentials; not logging in again until they change",
			"mode", spec.Auth.Mode, "rejectedInARow", n)
		wait, _ := gate.held(s.cp, creds.Fingerprint, s.now)
		refused := loginRefused(wait)
		s.loginRejected = true
		// Told once per rejected login (at most MaxRejectedLogins in a row), not per pass.
		s.peer.LoginRejected(refused)
		return refused
	case spec.Auth.Mode == datasancev3.AuthModeExternal && isCertificateMismatch(err):
		return identityProviderCertificateInvalid(spec.Auth.IssuerURL, err)
	case iofog.IsRetryable(err):
		ctrl.LoggerFrom(ctx).Info("Logging in to the Controller failed", "cause", iofog.Cause(err), "error", err.Error())
		// The Controller did not answer the login properly (down, 5xx, garbage, timeout): it is
		// unavailable, which retrying fixes; LoginFailed is kept for credentials a person must fix.
		return outcome.Wait(datasancev3.ReasonControllerUnavailable, RequeueControllerStatus,
			fmt.Sprintf("Logging in to the Controller failed (%s).", iofog.Cause(err)))
	default:
		return outcome.Retry(datasancev3.ReasonLoginFailed, fmt.Errorf("log in to the Controller: %w", err))
	}
}

// Reachable asks GET /status of the Controller at ep, an endpoint other than the in-cluster one
// (its LoadBalancer address), with a client of its own: nil when it answers, else the
// classified failure.
func (s *Session) Reachable(ctx context.Context, ep Endpoint) error {
	api, err := s.client(ep)
	if err != nil {
		return err
	}
	if _, err := api.Status(ctx); err != nil {
		return s.callFailed(ctx, err, ep,
			fmt.Sprintf("The Controller is not reachable through its LoadBalancer at %s", ep.BaseURL))
	}
	return nil
}

// LogIn asks GET /status and logs in, once per pass: the outcome of the first call is every
// later caller's.
func (s *Session) LogIn(ctx context.Context) error {
	_, err := s.loggedInClient(ctx)
	return err
}
