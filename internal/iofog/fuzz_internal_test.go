package iofog

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// FuzzAPIError: whatever a Controller (or a proxy in front of it) answers, building the error
// never panics, the error text and body never carry a secret that was sent with the request
// (raw or JSON-escaped), and the kept body is bounded.
func FuzzAPIError(f *testing.F) {
	f.Add(500, []byte(`{"name":"Error","message":"password p@ss\"w0rd is wrong"}`), `p@ss"w0rd`)
	f.Add(401, []byte(`{"error":"invalid_grant","error_description":"bad secret-123"}`), "secret-123")
	f.Add(404, []byte("<html>not found</html>"), "")
	f.Add(502, bytes.Repeat([]byte("x"), 5000), "xxxx")
	f.Add(400, []byte(`{"message":"\u0073ecret-abc"}`), "secret-abc")

	f.Fuzz(func(t *testing.T, status int, body []byte, secret string) {
		u, _ := url.Parse("http://controller:51121/api/v3/user/login")
		cl := call{method: "POST", url: u, secrets: []string{secret}}
		e := newAPIError(cl, answer{status: status, body: body})
		if len(e.Body) > maxErrorBodyBytes {
			t.Fatalf("kept %d body bytes, limit %d", len(e.Body), maxErrorBodyBytes)
		}
		// Only secrets that cannot arise from the mask itself are checked.
		if len(secret) < 4 || strings.Contains("[redacted]", secret) {
			return
		}
		for _, s := range []string{e.Error(), e.Name, e.Message, string(e.Body)} {
			if strings.Contains(s, secret) {
				t.Fatalf("secret %q survives in %q", secret, s)
			}
		}
	})
}

// FuzzDecodeAnswer: a 2xx body that is not what the client expects is an ErrInvalidResponse,
// never a panic, and valid JSON of the right shape always decodes.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add([]byte(`{"status":"online","uptimeSec":12.5}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Add([]byte(`{"status":`))
	f.Add([]byte(`null`))

	f.Fuzz(func(t *testing.T, body []byte) {
		var out map[string]any
		err := decodeAnswer("GET", "/api/v3/status", body, &out)
		var probe map[string]any
		wantOK := json.Unmarshal(body, &probe) == nil
		if wantOK != (err == nil) {
			t.Fatalf("decode error %v, but json.Unmarshal ok=%v for %q", err, wantOK, body)
		}
		if err := decodeAnswer("GET", "/api/v3/status", body, nil); err != nil && json.Valid(body) {
			t.Fatalf("valid JSON refused: %v", err)
		}
	})
}
