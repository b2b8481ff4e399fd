package iofog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

const (
	contentTypeJSON = "application/json"
	contentTypeForm = "application/x-www-form-urlencoded"
)

// call is one HTTP exchange.
type call struct {
	method      string
	url         *url.URL
	body        []byte
	contentType string
	// authorize adds the bearer token (protected Controller routes only).
	authorize bool
	// identityProvider sends the call with the identity provider's trust
	// (WithIdentityProviderRootCAs), not the Controller's.
	identityProvider bool
	// secrets are scrubbed from the server's answer before it becomes an
	// *APIError (login secrets an identity provider might echo).
	secrets []string
}

// answer is a fully read HTTP response.
type answer struct {
	status int
	body   []byte
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// endpoint returns the API URL for path segments; each segment is escaped, so
// a segment never adds a path level.
func (c *Client) endpoint(segments ...string) *url.URL {
	u := *c.apiURL
	var path, raw strings.Builder
	path.WriteString(u.Path)
	raw.WriteString(u.EscapedPath())
	for _, s := range segments {
		path.WriteString("/" + s)
		raw.WriteString("/" + url.PathEscape(s))
	}
	u.Path = path.String()
	u.RawPath = raw.String()
	return &u
}

// send performs cl within the client timeout and reads the answer. Only
// transport failures and unreadable bodies are errors here; status handling
// is the caller's. The body is always closed.
func (c *Client) send(ctx context.Context, cl call) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, cl.url.String(), body)
	if err != nil {
		return answer{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", contentTypeJSON)
	req.Header.Set("User-Agent", c.userAgent)
	if cl.body != nil {
		req.Header.Set("Content-Type", cl.contentType)
	}
	if cl.authorize {
		if token := c.bearerToken(); token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	}

	hc := c.httpClient
	if cl.identityProvider && c.idpClient != nil {
		hc = c.idpClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		// *url.Error already names the method and URL; callers add context.
		return answer{}, err
	}
	defer func() { _ = resp.Body.Close() }()

	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return answer{}, fmt.Errorf("read %s %s answer: %w", cl.method, cl.url.Path, err)
	}
	a := answer{status: resp.StatusCode, body: data}
	if len(data) > maxResponseBytes {
		if !a.ok() {
			// Error bodies are only informative: keep what was read.
			a.body = data[:maxResponseBytes]
			return a, nil
		}
		return answer{}, fmt.Errorf("read %s %s answer: %w: body exceeds %d bytes",
			cl.method, cl.url.Path, ErrInvalidResponse, maxResponseBytes)
	}
	return a, nil
}

// doJSON sends in (if not nil) as a JSON body and decodes a 2xx answer into
// out (if not nil). With out nil, a non-empty answer must still be JSON.
// Non-2xx answers become *APIError.
func (c *Client) doJSON(ctx context.Context, cl call, in, out any) error {
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s body: %w", cl.method, cl.url.Path, err)
		}
		cl.body, cl.contentType = data, contentTypeJSON
	}
	return c.do(ctx, cl, out)
}

// do sends cl and decodes a 2xx answer into out as doJSON does.
func (c *Client) do(ctx context.Context, cl call, out any) error {
	a, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	if !a.ok() {
		return newAPIError(cl, a)
	}
	return decodeAnswer(cl.method, cl.url.Path, a.body, out)
}

// decodeAnswer decodes a 2xx body into out, or only checks that it is JSON
// when out is nil.
func decodeAnswer(method, path string, body []byte, out any) error {
	if out == nil {
		if len(bytes.TrimSpace(body)) == 0 || json.Valid(body) {
			return nil
		}
		return fmt.Errorf("decode %s %s answer: %w: body is not JSON", method, path, ErrInvalidResponse)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode %s %s answer: %w: %w", method, path, ErrInvalidResponse, err)
	}
	return nil
}

// errorEnvelope covers the three error body shapes: the Controller's
// {"name","message"}, its authorization gate's {"error"[, "message"]}, and
// OAuth2's {"error","error_description"}.
type errorEnvelope struct {
	Name             string `json:"name"`
	Message          string `json:"message"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// newAPIError builds the *APIError for a non-2xx answer to cl. A body that
// is not an envelope (the HTML 404 of an unknown route, a proxy page) leaves
// Name and Message empty. cl.secrets are scrubbed before Body is truncated,
// so that no part of a secret survives at the cut.
func newAPIError(cl call, a answer) *APIError {
	e := &APIError{StatusCode: a.status, Method: cl.method, Path: cl.url.Path}
	body := redact(a.body, cl.secrets)

	var env errorEnvelope
	if json.Unmarshal(body, &env) == nil {
		e.Name, e.Message = env.Name, env.Message
		if e.Name == "" {
			e.Name = env.Error
		}
		if e.Message == "" {
			e.Message = env.ErrorDescription
		}
		// Catch secrets spelled with other JSON escapes.
		e.Name = string(redact([]byte(e.Name), cl.secrets))
		e.Message = string(redact([]byte(e.Message), cl.secrets))
	}
	if len(body) > maxErrorBodyBytes {
		body = body[:maxErrorBodyBytes]
	}
	e.Body = bytes.Clone(body)
	return e
}

// redact returns body with every non-empty secret, raw or JSON-escaped,
// replaced by a mask.
func redact(body []byte, secrets []string) []byte {
	mask := []byte("[redacted]")
	for _, s := range secrets {
		if s == "" {
			continue
		}
		body = bytes.ReplaceAll(body, []byte(s), mask)
		if quoted, err := json.Marshal(s); err == nil {
			// Strip the quotes: the escaped form as it appears inside a
			// JSON string.
			body = bytes.ReplaceAll(body, quoted[1:len(quoted)-1], mask)
		}
	}
	return body
}
