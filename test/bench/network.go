package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// controllerNet stands in for what a cluster's network does between the operator and each
// ControlPlane's Controller: cluster DNS + the Service (controller.<ns>.svc.cluster.local:51121)
// and the controller LoadBalancer address (<lb-ip>:51121). It is an HTTP proxy the operator
// process is given as HTTP_PROXY; it forwards each request unchanged to the fake Controller of
// that namespace (internal/iofog/fake, which records every request). Requests to loopback (the
// API servers, Git) never go through it.
type controllerNet struct {
	srv *http.Server
	url string

	// secrets is what the Controllers read their namespace's Secrets with (CA imports).
	secrets client.Reader

	mu     sync.Mutex
	routes map[string]*fake.Server // host:port → Controller
	byNS   map[string]*fake.Server
}

func startControllerNet(secrets client.Reader) (*controllerNet, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	n := &controllerNet{secrets: secrets, routes: map[string]*fake.Server{}, byNS: map[string]*fake.Server{}, url: "http://" + l.Addr().String()}
	n.srv = &http.Server{Handler: n, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = n.srv.Serve(l) }()
	return n, nil
}

// controller returns the fake Controller of namespace ns, started on first use and reachable at
// the in-cluster Service name.
func (n *controllerNet) controller(ns string) *fake.Server {
	n.mu.Lock()
	defer n.mu.Unlock()
	if s, ok := n.byNS[ns]; ok {
		return s
	}
	s := fake.NewServer(fake.WithSecretReader(fake.KubernetesSecrets(n.secrets, ns)))
	n.byNS[ns] = s
	n.routes["controller."+ns+".svc.cluster.local:51121"] = s
	return s
}

// routeLoadBalancer makes ip:51121 reach the Controller of ns, as the cloud load balancer of
// Service controller does.
func (n *controllerNet) routeLoadBalancer(ns, ip string) {
	s := n.controller(ns)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[net.JoinHostPort(ip, "51121")] = s
}

func (n *controllerNet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	s := n.routes[r.Host]
	n.mu.Unlock()
	if s == nil {
		http.Error(w, "no route to host "+r.Host, http.StatusBadGateway)
		return
	}
	s.ServeHTTP(w, r)
}

// calls counts the Controller API requests other than GET /status, over every Controller.
func (n *controllerNet) calls() int {
	n.mu.Lock()
	servers := make([]*fake.Server, 0, len(n.byNS))
	for _, s := range n.byNS {
		servers = append(servers, s)
	}
	n.mu.Unlock()
	total := 0
	for _, s := range servers {
		for _, r := range s.Requests() {
			if r.Path != "/api/v3/status" {
				total++
			}
		}
	}
	return total
}

func (n *controllerNet) close() {
	_ = n.srv.Close()
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.byNS {
		s.Close()
	}
}

// gitEvent is one Git smart-HTTP request that went through gitProxy.
type gitEvent struct {
	at       time.Time // when the response was complete
	repo     string
	push     bool // git-receive-pack POST (else a git-upload-pack POST: a fetch or clone)
	operator bool // sent by the operator process
}

// gitProxy is a reverse proxy in front of the test Git server that records every fetch and push
// and who sent it (the operator process, or anyone else: Flux, the floors). It forwards requests
// unchanged.
type gitProxy struct {
	srv    *http.Server
	url    string
	opPid  atomic.Int64
	mu     sync.Mutex
	events []gitEvent
	notify chan struct{}
}

type connOwnerKey struct{}

func startGitProxy(target string) (*gitProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &gitProxy{url: "http://" + l.Addr().String(), notify: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = nil
	p.srv = &http.Server{
		ReadHeaderTimeout: 30 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connOwnerKey{}, p.fromOperator(c))
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Recorded in a defer: ReverseProxy aborts the handler with a panic when the client
			// hangs up before the end of the body (go-git does, once it read the push report).
			defer p.record(r)
			rp.ServeHTTP(w, r)
		}),
	}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

// record notes a fetch or push request once it is over.
func (p *gitProxy) record(r *http.Request) {
	if r.Method != http.MethodPost {
		return
	}
	repo, service := filepath.Split(r.URL.Path)
	if service != "git-receive-pack" && service != "git-upload-pack" {
		return
	}
	op, _ := r.Context().Value(connOwnerKey{}).(bool)
	if os.Getenv("BENCH_DEBUG") != "" {
		progress("git %s %s from %s operator=%v", r.Method, r.URL.Path, r.RemoteAddr, op)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, gitEvent{
		at: time.Now(), repo: strings.TrimSuffix(strings.Trim(repo, "/"), ".git"),
		push: service == "git-receive-pack", operator: op,
	})
	close(p.notify)
	p.notify = make(chan struct{})
}

// repoURL is the URL of repository name through the proxy.
func (p *gitProxy) repoURL(name string) string { return p.url + "/" + name + ".git" }

// snapshot returns the events so far and a channel closed at the next one.
func (p *gitProxy) snapshot() ([]gitEvent, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]gitEvent(nil), p.events...), p.notify
}

// count returns the operator's fetches and pushes among events[from:].
func countGit(events []gitEvent, since time.Time) (fetches, pushes int) {
	for _, e := range events {
		if !e.operator || e.at.Before(since) {
			continue
		}
		if e.push {
			pushes++
		} else {
			fetches++
		}
	}
	return fetches, pushes
}

// fromOperator tells whether the client end of c belongs to the operator process: it finds the
// client socket's inode in /proc/net/tcp and looks for it among the operator's file descriptors.
func (p *gitProxy) fromOperator(c net.Conn) bool {
	pid := p.opPid.Load()
	if pid == 0 {
		return false
	}
	remote, ok := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok || !ok2 {
		return false
	}
	inode := socketInode(remote.Port, local.Port)
	if inode == "" {
		return false
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return false
	}
	want := "socket:[" + inode + "]"
	for _, fd := range fds {
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && link == want {
			return true
		}
	}
	return false
}

// socketInode returns the inode of the TCP socket bound to localPort and connected to
// remotePort (IPv4 loopback).
func socketInode(localPort, remotePort int) string {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	lp, rp := fmt.Sprintf(":%04X", localPort), fmt.Sprintf(":%04X", remotePort)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 {
			continue
		}
		if strings.HasSuffix(fields[1], lp) && strings.HasSuffix(fields[2], rp) {
			return fields[9]
		}
	}
	return ""
}

func (p *gitProxy) close() { _ = p.srv.Close() }

// ipAllocator hands out load balancer addresses from 198.18.0.0/15, the range reserved for
// benchmarking (RFC 2544): never routed, never loopback, so the operator's requests to them go
// through controllerNet.
type ipAllocator struct {
	mu   sync.Mutex
	next int
}

func (a *ipAllocator) allocate() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	for a.next%256 == 0 || a.next%256 == 255 {
		a.next++
	}
	n := a.next
	return "198." + strconv.Itoa(18+n/65536) + "." + strconv.Itoa(n/256%256) + "." + strconv.Itoa(n%256)
}
