package fake

import (
	"crypto/tls"
	"net"
	"net/http"
	"strings"
)

// Failure describes an injected misbehaviour for FailNext and FailAlways.
// Exactly one kind applies, checked in this order: Hang, Reset, Garbage,
// Body, then an error envelope with Status.
type Failure struct {
	// Status is the HTTP status. For an error envelope it defaults to 500;
	// with Garbage or Body it defaults to 200.
	Status int
	// Name and Message fill the error envelope; by default Name is the
	// Controller's error class for Status and Message the status text.
	Name, Message string
	// Hang blocks the request until the client gives up (its context ends
	// and the connection closes) or the server is closed.
	Hang bool
	// Reset aborts the connection with a TCP reset before any answer: the
	// client sees "connection reset by peer".
	Reset bool
	// Garbage answers a body that is not JSON.
	Garbage bool
	// Body answers these bytes verbatim with a JSON content type.
	Body []byte
}

// failureRule is a Failure bound to a route pattern.
type failureRule struct {
	pattern string
	failure Failure
}

// FailNext makes the next request matching route fail with f, once. route is
// "METHOD /path", e.g. "PUT /api/v3/router"; a path ending in "*" matches
// every path with that prefix, and the method "*" matches every method.
// Several FailNext calls for one route queue up in order. One-shot failures
// take precedence over FailAlways.
func (s *Server) FailNext(route string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.once1 = append(s.once1, failureRule{pattern: route, failure: f})
}

// FailAlways makes every request matching route fail with f until
// ClearFailures. route has the FailNext syntax.
func (s *Server) FailAlways(route string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always = append(s.always, failureRule{pattern: route, failure: f})
}

// ClearFailures removes every pending FailNext and FailAlways rule.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.once1, s.always = nil, nil
}

// takeFailure returns the failure for a request, consuming a one-shot rule.
func (s *Server) takeFailure(method, path string) (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rule := range s.once1 {
		if routeMatches(rule.pattern, method, path) {
			s.once1 = append(s.once1[:i:i], s.once1[i+1:]...)
			return rule.failure, true
		}
	}
	for _, rule := range s.always {
		if routeMatches(rule.pattern, method, path) {
			return rule.failure, true
		}
	}
	return Failure{}, false
}

func routeMatches(pattern, method, path string) bool {
	pm, pp, ok := strings.Cut(pattern, " ")
	if !ok || (pm != "*" && pm != method) {
		return false
	}
	if prefix, wildcard := strings.CutSuffix(pp, "*"); wildcard {
		return strings.HasPrefix(path, prefix)
	}
	return pp == path
}

// fail answers r according to f.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, f Failure) {
	switch {
	case f.Hang:
		// Never a fixed sleep: wait for the client to go away or for Close,
		// then drop the connection so that no response is ever sent.
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		dropConnection(w)
	case f.Reset:
		resetConnection(w)
	case f.Garbage:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(statusOr(f.Status, http.StatusOK))
		_, _ = w.Write([]byte("<html><body>502 upstream garbage {not json"))
	case f.Body != nil:
		w.Header().Set("Content-Type", jsonContentType)
		w.WriteHeader(statusOr(f.Status, http.StatusOK))
		_, _ = w.Write(f.Body)
	default:
		status := statusOr(f.Status, http.StatusInternalServerError)
		name := f.Name
		if name == "" {
			name = errorClass(status)
		}
		msg := f.Message
		if msg == "" {
			msg = http.StatusText(status)
		}
		writeError(w, status, name, msg)
	}
}

// dropConnection closes the underlying connection without a response.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = conn.Close()
}

// resetConnection closes the underlying TCP connection with SO_LINGER 0, so
// that the kernel sends a reset instead of an orderly close.
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	raw := conn
	if tc, ok := conn.(*tls.Conn); ok {
		raw = tc.NetConn()
	}
	if tcp, ok := raw.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = raw.Close()
}

func statusOr(status, def int) int {
	if status == 0 {
		return def
	}
	return status
}

// errorClass is the Controller error class that maps to status.
func errorClass(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "ValidationError"
	case http.StatusUnauthorized:
		return "AuthenticationError"
	case http.StatusForbidden:
		return "ForbiddenError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusConflict:
		return "ConflictError"
	default:
		return "Error"
	}
}
