package fake

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
)

const jsonContentType = "application/json; charset=utf-8"

// envelope is the Controller's handler error body; Stack is set on 500.
type envelope struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// writeJSON answers v as JSON with Express' content type.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"name":"Error","message":"fake: encode response"}`)
	}
	w.Header().Set("Content-Type", jsonContentType)
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// writeError answers the {"name","message"} envelope, with a stack on 500 as
// the Controller's response decorator does.
func writeError(w http.ResponseWriter, status int, name, message string) {
	e := envelope{Name: name, Message: message}
	if status == http.StatusInternalServerError {
		e.Stack = fmt.Sprintf("%s: %s\n    at Object.<anonymous> (/usr/src/app/src/fake.js:1:1)", name, message)
	}
	writeJSON(w, status, e)
}

// writeRouteNotFound answers Express' default 404 page for an unknown route.
func writeRouteNotFound(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	_, _ = fmt.Fprintf(w, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"+
		"<title>Error</title>\n</head>\n<body>\n<pre>Cannot %s %s</pre>\n</body>\n</html>\n",
		html.EscapeString(r.Method), html.EscapeString(r.URL.EscapedPath()))
}

// caName extracts {name} from /api/v3/certificates/ca/{name}: exactly one
// escaped path segment, decoded like Express' req.params.
func caName(r *http.Request, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if !ok {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	name, err := url.PathUnescape(rest)
	if err != nil {
		return "", false
	}
	return name, true
}
