package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// controllerAPIPath is the Controller REST API prefix (iofog.APIPath; not imported, so that
// internal/iofog can import this package).
const controllerAPIPath = "/api/v3/"

// endpointIdentityProvider labels requests outside the Controller API: token requests to an
// OIDC identity provider.
const endpointIdentityProvider = "identity_provider"

// controllerEndpoints are the endpoint templates of the Controller API the operator calls; a
// path that matches none is counted as "other", so no concrete path becomes a label value.
var controllerEndpoints = map[string]string{
	"status":          "/status",
	"user/login":      "/user/login",
	"router":          "/router",
	"nats/hub":        "/nats/hub",
	"nats/bootstrap":  "/nats/bootstrap",
	"certificates/ca": "/certificates/ca",
}

// ControllerEndpoint returns the endpoint template of a request path.
func ControllerEndpoint(path string) string {
	i := strings.Index(path, controllerAPIPath)
	if i < 0 {
		return endpointIdentityProvider
	}
	rest := strings.Trim(path[i+len(controllerAPIPath):], "/")
	if t, ok := controllerEndpoints[rest]; ok {
		return t
	}
	if name, ok := strings.CutPrefix(rest, "certificates/ca/"); ok && name != "" && !strings.Contains(name, "/") {
		return "/certificates/ca/{name}"
	}
	return "other"
}

// statusClass is "2xx" … "5xx", or "error" when no answer came.
func statusClass(resp *http.Response, err error) string {
	if err != nil || resp == nil {
		return "error"
	}
	return strconv.Itoa(resp.StatusCode/100) + "xx"
}

// ControllerAPITransport wraps next (http.DefaultTransport when nil) so that every request is
// counted and timed by endpoint template and status class.
func ControllerAPITransport(next http.RoundTripper) http.RoundTripper {
	return std.controllerAPITransport(next)
}

func (s *set) controllerAPITransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &instrumentedTransport{next: next, set: s}
}

type instrumentedTransport struct {
	next http.RoundTripper
	set  *set
}

// RoundTrip implements http.RoundTripper.
func (t *instrumentedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	endpoint := ControllerEndpoint(req.URL.Path)
	t.set.apiDuration.WithLabelValues(req.Method, endpoint).Observe(time.Since(start).Seconds())
	t.set.apiRequests.WithLabelValues(req.Method, endpoint, statusClass(resp, err)).Inc()
	return resp, err
}

// Unwrap returns the wrapped transport, so that callers can inspect its TLS settings.
func (t *instrumentedTransport) Unwrap() http.RoundTripper { return t.next }
