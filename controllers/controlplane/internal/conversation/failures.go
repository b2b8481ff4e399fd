package conversation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// Requeue delays of the conversation's waits (docs/controlplane.md#controller-reconcile-steps).
const (
	// RequeueControllerStatus follows a failed GET /status (in-cluster or external).
	RequeueControllerStatus = 3 * time.Second
	// RequeueRegistration follows a transient failure to register the router, the NATS hub or
	// a CA.
	RequeueRegistration = 10 * time.Second
)

// RequeueNatsBootstrap follows a failed GET /nats/bootstrap (the Controller is starting, is not
// the Kubernetes control plane yet, lacks its NATS Secrets, or answered 5xx), or a failed GET
// /nats/accounts while the JWT bundle must be rebuilt. Either is retried until it answers; nothing NATS
// is written without the bootstrap, and no JWT bundle with fewer accounts is written.
const RequeueNatsBootstrap = 10 * time.Second

// CallError is a Controller call that failed, with Cause, a short description of why that is
// the same for the same kind of failure on every pass (for condition messages; the error itself
// goes to the log).
type CallError struct {
	Cause string
	Err   error
}

// Error is the failure's own text.
func (e *CallError) Error() string { return e.Err.Error() }

// Unwrap returns the failure.
func (e *CallError) Unwrap() error { return e.Err }

func callError(err error) error {
	if err == nil {
		return nil
	}
	return &CallError{Cause: iofog.Cause(err), Err: err}
}

// callFailed classifies a failed call to the Controller at ep. A certificate that does not
// verify is an error with reason ControllerCertificateInvalid naming the dialled name and the
// certificate's names (retried with backoff; the controller TLS Secret and the CA Secret are
// watched). Anything else is a requeue after RequeueControllerStatus with reason
// ControllerUnavailable. The condition message is stable for the same cause (iofog.Cause); the
// full error goes to the log only, so a Controller that is down does not make every pass write
// a new message.
func (s *Session) callFailed(ctx context.Context, err error, ep Endpoint, what string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if m, ok := iofog.AsCertificateMismatch(err); ok {
		host := strings.Join(ep.ServerNames, " or ")
		if host == "" {
			host = HostOfURL(ep.BaseURL)
		}
		names := certificateNames(m)
		if m.UnknownAuthority {
			return outcome.Retry(datasancev3.ReasonControllerCertificateInvalid, fmt.Errorf(
				"the Controller's certificate at %s (names: %s) is not signed by a trusted CA: put its CA in ca.crt of Secret %q (spec.controller.secretName) or reference it with spec.controller.caSecretRef",
				ep.BaseURL, names, s.cp.Spec.Controller.SecretName))
		}
		return outcome.Retry(datasancev3.ReasonControllerCertificateInvalid, fmt.Errorf(
			"the Controller's certificate at %s does not cover %s (names: %s)", ep.BaseURL, host, names))
	}
	ctrl.LoggerFrom(ctx).Info("Calling the Controller failed", "url", ep.BaseURL, "cause", iofog.Cause(err), "error", err.Error())
	return outcome.Wait(datasancev3.ReasonControllerUnavailable, RequeueControllerStatus,
		fmt.Sprintf("%s (%s).", what, iofog.Cause(err)))
}

// registrationFailure classifies a failed registration call: refused because the login was
// rejected → LoginFailed error; transient (Controller down, 5xx, garbage, timeout) → requeue
// after RequeueRegistration with a message stable for the cause (the detail is logged);
// otherwise a RegistrationFailed error.
func (s *Session) registrationFailure(ctx context.Context, err error) error {
	var apiErr *iofog.APIError
	if s.loginRejected && errors.As(err, &apiErr) &&
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
		return outcome.Wait(datasancev3.ReasonRegistrationFailed, RequeueRegistration,
			fmt.Sprintf("Registering with the Controller failed: %s (%s).", what, iofog.Cause(err)))
	}
	return outcome.Retry(datasancev3.ReasonRegistrationFailed, err)
}

// certificateNames lists the names a certificate that did not verify covers, for a message.
func certificateNames(m *iofog.CertificateMismatch) string {
	if len(m.Names) == 0 {
		return "no names"
	}
	return strings.Join(m.Names, ", ")
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
	names := certificateNames(m)
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
			LoginRetryInterval, MaxRejectedLogins))
	}
	return outcome.Stop(datasancev3.ReasonLoginFailed, fmt.Errorf(
		"the Controller rejected the operator's credentials (invalid credentials) %d times in a row: fix spec.auth or the Secret it references; "+
			"the operator does not log in again until they change (the Controller locks the account after 5 failures)", MaxRejectedLogins))
}

// HostOfURL is the host of the URL raw (no port), or raw when it does not parse.
func HostOfURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Hostname()
}
