package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"
)

// The Git proxy tells the operator's requests from everyone else's by the client socket's owner.
func TestGitProxyAttributesRequestsToTheProcess(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer backend.Close()
	p, err := startGitProxy(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()

	// "The operator" is this test process; curl is someone else.
	p.opPid.Store(int64(os.Getpid()))
	cmd := exec.CommandContext(t.Context(), "curl", "-s", "-X", "POST", p.url+"/other.git/git-upload-pack")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
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

	deadline := time.Now().Add(5 * time.Second)
	for {
		events, _ := p.snapshot()
		if len(events) == 2 {
			if events[0].operator || events[0].push || events[0].repo != "other" ||
				!events[1].operator || !events[1].push || events[1].repo != "repo" {
				t.Fatalf("events = %+v", events)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events = %+v", events)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
