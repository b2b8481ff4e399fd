package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// FreePorts returns n distinct TCP ports of 127.0.0.1 that were free a moment ago: all n are
// held open together while they are picked, so they differ, and closed before returning, so the
// caller's process can bind them.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("find a free port: not a TCP address")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}

// FreePort is one port of FreePorts.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreeAddr is "127.0.0.1:<FreePort>".
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return LoopbackAddr(port), nil
}

// LoopbackAddr is "127.0.0.1:port".
func LoopbackAddr(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// FatalTB is the part of testing.TB the Must helpers need.
type FatalTB interface {
	Helper()
	Fatal(args ...any)
}

// MustFreePort is FreePort that fails the test on an error.
func MustFreePort(t FatalTB) int {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// MustFreeAddr is FreeAddr that fails the test on an error.
func MustFreeAddr(t FatalTB) string {
	t.Helper()
	return LoopbackAddr(MustFreePort(t))
}

// Get sends a GET to url with hc (http.DefaultClient when nil), with a bearer token when bearer is
// not empty, and returns the status code and the body. It is the one scrape of /metrics and probe
// of /readyz of the tests.
func Get(ctx context.Context, hc *http.Client, url, bearer string) (int, []byte, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// errNotReady is a probe that answered, but not 200.
var errNotReady = errors.New("not ready")

// Ready probes http://<addr>/readyz once: nil when it answers 200.
func Ready(ctx context.Context, addr string) error {
	code, _, err := Get(ctx, nil, "http://"+addr+"/readyz", "")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("%w: /readyz answered %d", errNotReady, code)
	}
	return nil
}
