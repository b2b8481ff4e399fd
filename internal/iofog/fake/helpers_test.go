package fake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
)

// answer is a fully read response.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request to srv; token "" sends no Authorization header.
func do(t *testing.T, srv *fake.Server, method, path, contentType, body, token string) answer {
	t.Helper()
	g := NewWithT(t)
	var reader io.Reader
	if body != "" {
		reader = bytes.NewBufferString(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, srv.URL()+path, reader)
	g.Expect(err).NotTo(HaveOccurred())
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// doJSON sends a JSON body with a token.
func doJSON(t *testing.T, srv *fake.Server, method, path, body, token string) answer {
	t.Helper()
	return do(t, srv, method, path, "application/json", body, token)
}

func newFake(t *testing.T, opts ...fake.Option) *fake.Server {
	t.Helper()
	srv := fake.NewServer(opts...)
	t.Cleanup(srv.Close)
	return srv
}

// expectJSON checks the common JSON answer shape.
func expectJSON(g Gomega, a answer, status int, body string) {
	g.ExpectWithOffset(1, a.status).To(Equal(status), string(a.body))
	g.ExpectWithOffset(1, a.header.Get("Content-Type")).To(Equal("application/json; charset=utf-8"))
	g.ExpectWithOffset(1, a.header.Get("X-Timestamp")).To(MatchRegexp(`^[0-9]{13}$`))
	if body != "" {
		g.ExpectWithOffset(1, a.body).To(MatchJSON(body))
	}
}

// errorOf decodes an error envelope.
func errorOf(g Gomega, a answer) (name, message string) {
	var env struct{ Name, Message string }
	g.ExpectWithOffset(1, json.Unmarshal(a.body, &env)).To(Succeed())
	return env.Name, env.Message
}

// testCAPEM returns the certificate and key PEM of a new self-signed CA.
func testCAPEM(g Gomega, name string) (certPEM, keyPEM []byte) {
	kp, err := pki.GenerateCA(name, time.Now(), 0)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return kp.CertPEM, kp.KeyPEM
}
