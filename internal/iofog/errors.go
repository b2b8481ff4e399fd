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
	"slices"
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

	// ErrCAInUse is returned by DeleteCA when the Controller refuses to delete
	// a CA because it has signed certificates with it (every agent's router
	// and NATS certificates): ValidationError "Cannot delete CA that has signed
	// certificates", which the route answers as HTTP 500 (it maps only 401 and
	// 404), 400 where the class is mapped. Such a CA can never be replaced by
	// delete and import while those certificates exist.
	ErrCAInUse = errors.New("CA has signed certificates")

	// ErrInvalidResponse is returned when a 2xx answer cannot be used: the
	// body is not the expected JSON, a required field is empty, or the body
	// is larger than the read limit.
	ErrInvalidResponse = errors.New("invalid response")
)

// conflictErrorName is the error class the Controller puts in the "name"
// field of a duplicate-create answer.
const conflictErrorName = "ConflictError"

// validationErrorName is the error class of a request the Controller refuses
// on its merits (a schema failure, a CA still in use).
const validationErrorName = "ValidationError"

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
// for TLS verification failures, for rejected credentials, for a CA the
// Controller refuses to delete (ErrCAInUse, a 500) and for other 4xx answers,
// which need a fix rather than a retry.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if isTLSVerificationError(err) || errors.Is(err, ErrInvalidCredentials) || errors.Is(err, ErrCAInUse) {
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

// Cause is a short, stable description of why a call failed, for condition messages: the same
// kind of failure gives the same text on every pass (connection reset, HTTP 503 Error, timeout),
// unlike err.Error(), which carries ephemeral ports and server text. It classifies by type and
// status code, never by message text. Log err itself for the detail.
func Cause(err error) string {
	var apiErr *APIError
	var dnsErr *net.DNSError
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &apiErr):
		if apiErr.Name != "" {
			return fmt.Sprintf("HTTP %d %s", apiErr.StatusCode, apiErr.Name)
		}
		return fmt.Sprintf("HTTP %d", apiErr.StatusCode)
	case errors.Is(err, ErrInvalidCredentials):
		return "invalid credentials"
	case isTLSVerificationError(err):
		return "TLS verification failed"
	case errors.Is(err, ErrInvalidResponse):
		return "invalid response"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed without an answer"
	case errors.As(err, &dnsErr):
		return "DNS lookup failed"
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return "connection failed"
	default:
		return "request failed"
	}
}

// CertificateMismatch describes a server certificate that failed verification: the name the
// client dialled and what the certificate covers.
type CertificateMismatch struct {
	// Host is the name (or IP address) the client verified the certificate against.
	Host string
	// Names are the certificate's DNS and IP subject alternative names.
	Names []string
	// UnknownAuthority is true when the chain does not lead to a trusted CA; false when the
	// certificate is trusted but does not cover Host.
	UnknownAuthority bool
}

// AsCertificateMismatch reports whether err is a failed verification of the server certificate
// and, if so, what was dialled and what the certificate covers.
func AsCertificateMismatch(err error) (*CertificateMismatch, bool) {
	var hostErr x509.HostnameError
	if errors.As(err, &hostErr) && hostErr.Certificate != nil {
		return &CertificateMismatch{Host: hostErr.Host, Names: certificateNames(hostErr.Certificate)}, true
	}
	var verifyErr *tls.CertificateVerificationError
	if errors.As(err, &verifyErr) {
		m := &CertificateMismatch{UnknownAuthority: true}
		if len(verifyErr.UnverifiedCertificates) > 0 {
			m.Names = certificateNames(verifyErr.UnverifiedCertificates[0])
		}
		return m, true
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		m := &CertificateMismatch{UnknownAuthority: true}
		if unknown.Cert != nil {
			m.Names = certificateNames(unknown.Cert)
		}
		return m, true
	}
	return nil, false
}

// certificateNames lists the DNS and IP SANs of c, each once (some issuers put an IP in both).
func certificateNames(c *x509.Certificate) []string {
	names := append([]string(nil), c.DNSNames...)
	for _, ip := range c.IPAddresses {
		if s := ip.String(); !slices.Contains(names, s) {
			names = append(names, s)
		}
	}
	return names
}
