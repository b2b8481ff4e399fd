package tenant

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// MaxResponseBytes bounds the body of one answer of a vCluster's API server that is not a watch
// stream. client-go decodes an answer whole before anything can trim it, so without a bound a
// server that answers a list (or a get) with gigabytes, a hostile one or a vCluster whose
// administrator filled it with large objects, would take the operator's memory, which every
// tenant shares. An honest list page of the kinds the operator reads is a few MiB at most.
const MaxResponseBytes = 64 << 20

// ErrResponseTooLarge means a vCluster's API server answered with more than MaxResponseBytes.
var ErrResponseTooLarge = errors.New("the vCluster API server's answer is too large")

// boundResponses wraps a vCluster transport so that an answer's body fails with
// ErrResponseTooLarge once it passes limit bytes (at once when its Content-Length says so).
// Watch streams are not bounded as a whole: they last, and each of their events is one object.
func boundResponses(limit int64) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &boundedTransport{next: next, limit: limit}
	}
}

type boundedTransport struct {
	next  http.RoundTripper
	limit int64
}

func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.Body == nil || req.URL.Query().Get("watch") == "true" {
		return resp, err
	}
	if resp.ContentLength > t.limit {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%w: %s %s announced %d bytes, the limit is %d", ErrResponseTooLarge, req.Method, req.URL.Path, resp.ContentLength, t.limit)
	}
	resp.Body = &boundedBody{body: resp.Body, limit: t.limit, what: req.Method + " " + req.URL.Path}
	return resp, nil
}

// CloseIdleConnections lets the vCluster client's idle connections be closed through the
// wrapper (utilnet.CloseIdleConnectionsFor).
func (t *boundedTransport) CloseIdleConnections() {
	utilnet.CloseIdleConnectionsFor(t.next)
}

// WrappedRoundTripper names the wrapped transport for client-go's transport inspection.
func (t *boundedTransport) WrappedRoundTripper() http.RoundTripper { return t.next }

// boundedBody reads at most limit bytes of body; one byte more is ErrResponseTooLarge.
type boundedBody struct {
	body  io.ReadCloser
	limit int64
	read  int64
	what  string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.read > b.limit {
		return 0, b.tooLarge()
	}
	if room := b.limit - b.read + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.body.Read(p)
	b.read += int64(n)
	if b.read > b.limit {
		return n - int(b.read-b.limit), b.tooLarge()
	}
	return n, err
}

func (b *boundedBody) tooLarge() error {
	return fmt.Errorf("%w: %s answered more than %d bytes", ErrResponseTooLarge, b.what, b.limit)
}

func (b *boundedBody) Close() error { return b.body.Close() }
