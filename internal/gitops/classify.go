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
// not verify, with ErrRepositoryNotFound when the repository does not exist,
// and returns it unchanged otherwise.
func classifyRemote(err error) error {
	if err == nil || errors.Is(err, ErrAuthFailed) {
		return err
	}
	if isAuthFailure(err) {
		return fmt.Errorf("%w: %w", ErrAuthFailed, err)
	}
	if errors.Is(err, transport.ErrRepositoryNotFound) && !errors.Is(err, ErrRepositoryNotFound) {
		return fmt.Errorf("%w: %w", ErrRepositoryNotFound, err)
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
	return err
}

func isAuthFailure(err error) bool {
	if errors.Is(err, transport.ErrAuthenticationRequired) ||
		errors.Is(err, transport.ErrAuthorizationFailed) ||
		errors.Is(err, transport.ErrInvalidAuthMethod) {
		return true
	}
	if code, ok := httpStatus(err); ok && (code == http.StatusUnauthorized || code == http.StatusForbidden) {
		return true
	}
	return isSSHAuthRejected(err)
}

// httpStatus digs the status code out of go-git's HTTP error, which it may
// hide inside a plumbing.UnexpectedError (that type has no Unwrap).
func httpStatus(err error) (int, bool) {
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
