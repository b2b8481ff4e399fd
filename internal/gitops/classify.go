package gitops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"golang.org/x/crypto/ssh"
	xknownhosts "golang.org/x/crypto/ssh/knownhosts"
)

// classifyRemote wraps an error from a fetch, list or push with
// ErrAuthFailed when the server refused the credentials or the host key did
// not verify, with ErrForbidden when it answered HTTP 403, with
// ErrRepositoryNotFound when the repository does not exist, and returns it
// unchanged otherwise. An HTTP answer's body never survives: go-git puts
// the whole body of a 401, 403, 404 or other refused request into its error
// text, and a server (an internal endpoint behind the repository URL, a
// proxy's error page) chooses what that body holds, so the error keeps the
// status and go-git's sentinel only (withoutHTTPBody).
func classifyRemote(err error) error {
	if err == nil || errors.Is(err, ErrAuthFailed) || errors.Is(err, ErrForbidden) {
		return err
	}
	if isForbidden(err) {
		return fmt.Errorf("%w: %w", ErrForbidden, withoutHTTPBody(err))
	}
	if isAuthFailure(err) {
		return fmt.Errorf("%w: %w", ErrAuthFailed, withoutHTTPBody(err))
	}
	if errors.Is(err, transport.ErrRepositoryNotFound) && !errors.Is(err, ErrRepositoryNotFound) {
		return fmt.Errorf("%w: %w", ErrRepositoryNotFound, withoutHTTPBody(err))
	}
	var keyErr *xknownhosts.KeyError
	var revoked *xknownhosts.RevokedError
	var negotiation *ssh.AlgorithmNegotiationError
	// The client only offers the host key types known_hosts lists, so a
	// server whose host key is of another type fails negotiation instead.
	if errors.As(err, &keyErr) || errors.As(err, &revoked) ||
		(errors.As(err, &negotiation) && negotiation.What == "host key") {
		return fmt.Errorf("%w: ssh host key verification against known_hosts failed: %w", ErrAuthFailed, err)
	}
	return withoutHTTPBody(err)
}

// withoutHTTPBody replaces an error that carries an HTTP answer's body (go-git's 401, 403 and
// 404 errors, "<sentinel>: <body>", and its error for any other refused status, whose text is
// the body) with one that keeps go-git's sentinel and the status only. Other errors are
// returned as they are.
func withoutHTTPBody(err error) error {
	for _, sentinel := range []error{transport.ErrAuthenticationRequired, transport.ErrAuthorizationFailed, transport.ErrRepositoryNotFound} {
		if errors.Is(err, sentinel) {
			return fmt.Errorf("%w (the server's answer is not shown)", sentinel)
		}
	}
	if code, ok := httpStatus(err); ok {
		return &httpStatusError{code: code}
	}
	return err
}

// httpStatusError is a refused HTTP request of the Git protocol, its body left out.
type httpStatusError struct{ code int }

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("the Git server answered HTTP %d %s (the answer is not shown)", e.code, http.StatusText(e.code))
}

func isForbidden(err error) bool {
	if errors.Is(err, transport.ErrAuthorizationFailed) {
		return true
	}
	code, ok := httpStatus(err)
	return ok && code == http.StatusForbidden
}

func isAuthFailure(err error) bool {
	if errors.Is(err, transport.ErrAuthenticationRequired) || errors.Is(err, transport.ErrInvalidAuthMethod) {
		return true
	}
	if code, ok := httpStatus(err); ok && code == http.StatusUnauthorized {
		return true
	}
	return isSSHAuthRejected(err)
}

// httpStatus digs the status code out of go-git's HTTP error, which it may
// hide inside a plumbing.UnexpectedError (that type has no Unwrap), or out of
// an httpStatusError.
func httpStatus(err error) (int, bool) {
	var stripped *httpStatusError
	if errors.As(err, &stripped) {
		return stripped.code, true
	}
	var httpErr *githttp.Err
	if errors.As(err, &httpErr) {
		return httpErr.StatusCode(), true
	}
	var unexpected *plumbing.UnexpectedError
	if errors.As(err, &unexpected) && errors.As(unexpected.Err, &httpErr) {
		return httpErr.StatusCode(), true
	}
	return 0, false
}

// isSSHAuthRejected reports an SSH user-authentication failure.
// golang.org/x/crypto/ssh returns it as an unexported fmt.Errorf value (no
// sentinel, no type), so matching its fixed prefix is the only way; this is
// the one place that looks at error text.
func isSSHAuthRejected(err error) bool {
	return strings.Contains(err.Error(), "ssh: unable to authenticate")
}

// isRemoteError reports whether err came from talking to the server (network,
// authentication, server answers, cancellation) rather than from the local
// clone. Local errors make the Writer throw the clone away and fetch again;
// remote ones are returned to the caller, since a fresh clone would not help.
// When in doubt (io.EOF may be a dropped connection or a truncated pack file)
// an error counts as local: a needless re-fetch is cheap, a clone that stays
// broken blocks the repository.
func isRemoteError(err error) bool {
	switch {
	case errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrAuthFailed),
		errors.Is(err, ErrForbidden),
		isForbidden(err),
		errors.Is(err, ErrRepositoryTooLarge),
		errors.Is(err, transport.ErrRepositoryNotFound),
		errors.Is(err, transport.ErrEmptyRemoteRepository),
		isAuthFailure(err):
		return true
	}
	var netErr net.Error // includes *url.Error from net/http
	var unexpected *plumbing.UnexpectedError
	var permanent *plumbing.PermanentError
	var httpErr *githttp.Err
	return errors.As(err, &netErr) || errors.As(err, &unexpected) ||
		errors.As(err, &permanent) || errors.As(err, &httpErr)
}
