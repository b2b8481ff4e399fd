package main

import (
	"net/http"
	"net/http/httptest"
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

	post := func(start func(*exec.Cmd)) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "curl", "-s", "-X", "POST", p.url+"/repo.git/git-receive-pack")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		start(cmd)
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	p.opPid.Store(1) // not curl
	post(func(*exec.Cmd) {})
	// curl as "the operator": its pid is known once started; the connection comes after.
	post(func(c *exec.Cmd) { p.opPid.Store(int64(c.Process.Pid)) })

	deadline := time.Now().Add(5 * time.Second)
	for {
		events, _ := p.snapshot()
		if len(events) == 2 {
			if events[0].operator || !events[1].operator || events[1].repo != "repo" || !events[1].push {
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
