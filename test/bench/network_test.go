package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// The Git proxy tells the operator's requests from everyone else's by the client socket's owner.
func TestGitProxyAttributesRequestsToTheProcess(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer backend.Close()
	p, err := startGitProxy(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	// "The operator" is this test process; this test binary run again is someone else.
	p.opPid.Store(int64(os.Getpid()))
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestProxyClientProcess$")
	cmd.Env = append(os.Environ(), "BENCH_PROXY_CLIENT_URL="+p.url+"/other.git/git-upload-pack")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("client process: %v\n%s", err, out)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, p.url+"/repo.git/git-receive-pack", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()

	g := NewWithT(t)
	var events []gitEvent
	g.Eventually(func() int {
		events, _ = p.snapshot()
		return len(events)
	}, 5*time.Second, 10*time.Millisecond).Should(Equal(2))
	if events[0].operator || events[0].push || events[0].repo != "other" ||
		!events[1].operator || !events[1].push || events[1].repo != "repo" {
		t.Fatalf("events = %+v", events)
	}
}

// TestProxyClientProcess is the other process of the test above: it only runs when that test
// starts this binary with BENCH_PROXY_CLIENT_URL set.
func TestProxyClientProcess(t *testing.T) {
	url := os.Getenv("BENCH_PROXY_CLIENT_URL")
	if url == "" {
		return
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
}
