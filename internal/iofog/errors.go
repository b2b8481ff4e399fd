package iofog

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Sentinel errors. Test for them with errors.Is; they are never returned
// bare, always wrapped with the request that produced them.
var (
	// ErrNotFound matches an *APIError whose status code is 404.
	ErrNotFound = errors.New("resource not found")

	// ErrConflict matches an *APIError for a duplicate create: HTTP 409, or
	// HTTP 500 carrying the error class ConflictError (the Controller 3.7.x
	// quirk on POST /certificates/ca).
	ErrConflict = errors.New("resource already exists")

	// ErrInvalidCredentials is returned by Login for a 400 or 401 answer and
	// by LoginClientCredentials when the identity provider rejects the client
	// with 400 or 401. The Controller gives no further detail on purpose.
	ErrInvalidCredentials = errors.New("invalid credentials")

	// ErrInvalidResponse is returned when a 2xx answer cannot be used: the
	// body is not the expected JSON, a required field is empty, or the body
	// is larger than the read limit.
	ErrInvalidResponse = errors.New("invalid response")
)

// conflictErrorName is the error class the Controller puts in the "name"
// field of a duplicate-create answer.
const conflictErrorName = "ConflictError"

// maxErrorBodyBytes bounds APIError.Body and therefore the memory an error
// holds on to.
const maxErrorBodyBytes = 4 << 10

// maxErrorMessageLen bounds the server-provided message in Error().
const maxErrorMessageLen = 512

// APIError is a non-2xx answer from the Controller or the identity provider.
//
// Name and Message come from the Controller's envelope {"name","message"}.
// The authorization gate answers {"error": ...} instead, and OAuth2 token
// endpoints {"error","error_description"}; those fields are mapped to Name and
// Message respectively when the envelope fields are absent.
type APIError struct {
	// StatusCode is the HTTP status code of the answer.
	StatusCode int
	// Method is the HTTP method of the request.
	Method string
	// Path is the URL path of the request (no host, no query).
	Path string
	// Name is the server's error class, e.g. ValidationError.
	Name string
	// Message is the server's human-readable message.
	Message string
	// Body is the raw answer, truncated to 4 KiB.
	Body []byte
}

// Error describes the failed request by method, path, status, and the
// server's error class and message. It never includes request headers.
func (e *APIError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.StatusCode)
	if e.Name != "" {
		msg += " " + e.Name
	}
	if e.Message != "" {
		m := e.Message
		if len(m) > maxErrorMessageLen {
			m = m[:maxErrorMessageLen] + "..."
		}
		msg += ": " + m
	}
	return msg
}

// Is reports whether the answer is of the kind named by a sentinel, so that
// errors.Is(err, ErrNotFound) and errors.Is(err, ErrConflict) work on any
// error chain containing an *APIError. The decision uses the status code and
// the structured error class, not message text.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	case ErrConflict:
		return e.StatusCode == http.StatusConflict ||
			(e.StatusCode == http.StatusInternalServerError && e.Name == conflictErrorName)
	default:
		return false
	}
}

// IsRetryable reports whether err is worth retrying later without any change
// on the caller's side: timeouts (including the client timeout), refused or
// reset connections, DNS failures, 5xx answers, 408 and 429, and 2xx answers
// with an unusable body. It reports false for nil, for a cancelled context,
// for TLS verification failures, for rejected credentials and for other 4xx
// answers, which need a fix rather than a retry.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if isTLSVerificationError(err) || errors.Is(err, ErrInvalidCredentials) {
		return false
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode >= http.StatusInternalServerError ||
			apiErr.StatusCode == http.StatusRequestTimeout ||
			apiErr.StatusCode == http.StatusTooManyRequests
	}
	if errors.Is(err, ErrInvalidResponse) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// isTLSVerificationError reports whether err comes from a failed verification
// of the server's certificate.
func isTLSVerificationError(err error) bool {
	var verifyErr *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostnameErr x509.HostnameError
	var invalidErr x509.CertificateInvalidError
	return errors.As(err, &verifyErr) || errors.As(err, &unknownAuthority) ||
		errors.As(err, &hostnameErr) || errors.As(err, &invalidErr)
}
