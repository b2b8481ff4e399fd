package gitops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh/knownhosts"
)

// pushGate lets pushes through until it is armed; from then on it holds every push until
// opened, and tells when the first held one waits.
type pushGate struct {
	armed    atomic.Bool
	waiting  chan struct{}
	waitOnce sync.Once
	release  chan struct{}
	openOnce sync.Once
}

func newPushGate(t *testing.T) *pushGate {
	p := &pushGate{waiting: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(p.open)
	return p
}

func (p *pushGate) option() Option {
	return WithBeforePush(func() {
		if !p.armed.Load() {
			return
		}
		p.waitOnce.Do(func() { close(p.waiting) })
		<-p.release
	})
}

func (p *pushGate) open() { p.openOnce.Do(func() { close(p.release) }) }

// A lookup never waits for a batch of its branch: while a push holds the clone, SameFolder and
// Log fail at once with a *BusyError whose Freed channel closes when the batch ends, and answer
// after that.
func TestLookupsDoNotWaitForARunningBatch(t *testing.T) {
	g := NewWithT(t)
	repo := testRepo(newServer(t))
	gate := newPushGate(t)
	w := newTestWriter(t, gate.option())
	first := apply(t, w, repo, appChange("web", map[string]string{"a.yaml": "1"}))
	second := apply(t, w, repo, appChange("web", map[string]string{"a.yaml": "2"}))
	gate.armed.Store(true)
	held := submit(g, w, repo, "other", "x")
	<-gate.waiting

	// Asked on goroutines, so that a lookup that waited fails the test instead of hanging it.
	answers := make(chan error, 2)
	go func() {
		_, err := w.SameFolder(context.Background(), repo, "apps/ns/web", first.Commit, second.Commit)
		answers <- err
	}()
	var err error
	g.Eventually(answers, 10*time.Second).Should(Receive(&err), "SameFolder waited for the held push")
	var busy *BusyError
	g.Expect(errors.As(err, &busy)).To(BeTrue(), "SameFolder: %v", err)
	g.Expect(err).To(MatchError(ErrBranchBusy))
	g.Expect(busy.Branch).To(Equal(repo.Branch))
	go func() {
		_, err := w.Log(context.Background(), repo)
		answers <- err
	}()
	g.Eventually(answers, 10*time.Second).Should(Receive(&err), "Log waited for the held push")
	g.Expect(err).To(MatchError(ErrBranchBusy), "Log")
	g.Expect(busy.Freed).NotTo(BeClosed(), "the batch still holds the clone")

	gate.open()
	<-held.Done()
	g.Eventually(busy.Freed).Should(BeClosed())
	same, err := w.SameFolder(context.Background(), repo, "apps/ns/web", first.Commit, second.Commit)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeFalse())
	entries, err := w.Log(context.Background(), repo)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(3))
}

// Release never waits for a running batch: it returns at once, the other branches' callers go on
// meanwhile, and the branch is dropped when its batch ends.
func TestReleaseDuringABatchWaitsForNobody(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t)
	slow := Repo{URL: srv.HTTPAddress() + "/org/slow.git", Branch: testBranch}
	other := Repo{URL: srv.HTTPAddress() + "/org/other.git", Branch: testBranch}
	gate := newPushGate(t)
	cache := t.TempDir()
	w := NewWriter(cache, WithClock(fixedClock{}), gate.option())
	apply(t, w, other, appChange("web", map[string]string{"a.yaml": "1"}))
	gate.armed.Store(true)
	held := submit(g, w, slow, "web", "x")
	<-gate.waiting

	released := make(chan error, 1)
	go func() { released <- w.Release(slow) }()
	g.Eventually(released, 10*time.Second).Should(Receive(BeNil()), "Release waited for the held push")
	// Another branch's lookup needs the Writer's lock Release held.
	_, err := w.Log(context.Background(), other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.Repositories()).To(Equal(2), "the slow branch is kept while its batch runs")

	gate.open()
	<-held.Done()
	_, err = held.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(w.Repositories).Should(Equal(1), "dropped once its batch ended")
}

// holdingProxy forwards to a Git server and holds every push (git-receive-pack POST) until
// opened: a Git server that answers its pushes slowly.
type holdingProxy struct {
	srv     *httptest.Server
	held    atomic.Int32
	release chan struct{}
	once    sync.Once
}

func newHoldingProxy(t *testing.T, target string) *holdingProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &holdingProxy{release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(u)
	p.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			p.held.Add(1)
			select {
			case <-p.release:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(func() { p.open(); p.srv.Close() })
	return p
}

func (p *holdingProxy) open() { p.once.Do(func() { close(p.release) }) }

// A Git server that holds its pushes keeps at most WithMaxOperationsPerHost of the Writer's
// slots: with two slots and one per server, the slow server's second branch waits for its
// server's slot, not for one of the two, and another server's branch is written meanwhile.
func TestASlowGitServerHoldsOnlyItsShareOfTheSlots(t *testing.T) {
	g := NewWithT(t)
	slowServer := newHoldingProxy(t, newServer(t).HTTPAddress())
	fast := Repo{URL: newServer(t).HTTPAddress() + "/org/apps.git", Branch: testBranch}
	w := newTestWriter(t, WithMaxConcurrentOperations(2), WithMaxOperationsPerHost(1))

	var held []*Pending
	for i := range 2 {
		repo := Repo{URL: fmt.Sprintf("%s/org/apps-%d.git", slowServer.srv.URL, i), Branch: testBranch}
		held = append(held, submit(g, w, repo, "web", "x"))
	}
	g.Eventually(slowServer.held.Load, 30*time.Second).Should(BeEquivalentTo(1))

	done := submit(g, w, fast, "web", "y")
	g.Eventually(done.Done(), 30*time.Second).Should(BeClosed(), "the other server's branch waited behind the slow server")
	_, err := done.Result()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(slowServer.held.Load()).To(BeEquivalentTo(1), "the slow server's second branch waits for its server's slot")
	for _, p := range held {
		g.Expect(p.Done()).NotTo(BeClosed())
	}

	slowServer.open()
	for _, p := range held {
		<-p.Done()
		_, err := p.Result()
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(slowServer.held.Load()).To(BeEquivalentTo(2))
}

func TestHostKey(t *testing.T) {
	g := NewWithT(t)
	g.Expect(hostKey("https://Git.Example.com/org/a.git")).To(Equal(hostKey("https://git.example.com/org/b.git")))
	g.Expect(hostKey("https://git.example.com:8443/a.git")).NotTo(Equal(hostKey("https://git.example.com/a.git")))
	g.Expect(hostKey("git@git.example.com:org/a.git")).To(Equal(hostKey("ssh://git@git.example.com/org/b.git")))
	g.Expect(hostKey("https://a.example.com/a.git")).NotTo(Equal(hostKey("https://b.example.com/a.git")))
}

// silentServer accepts connections and never answers: a Git server (or anything on its
// address) that hangs. It counts the connections.
func silentServer(t *testing.T, respondHeaders bool) (addr string, conns *atomic.Int32) {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int32{}
	var open sync.WaitGroup
	done := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			open.Go(func() {
				if respondHeaders {
					// Headers of a smart-HTTP ref advertisement, then nothing more.
					_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: application/x-git-upload-pack-advertisement\r\nContent-Length: 100000\r\n\r\n001e# service=git-upload-pack\n"))
				}
				<-done
				_ = c.Close()
			})
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); close(done); open.Wait() })
	return ln.Addr().String(), conns
}

// Every transport ends at the batch's timeout against a server that never answers: HTTP before
// the response headers and in the middle of the body, SSH before the server's banner.
func TestAServerThatNeverAnswersEndsTheBatchAtItsTimeout(t *testing.T) {
	identity, _ := newSSHKey(t)
	for _, tc := range []struct {
		name    string
		headers bool
		repo    func(addr string) Repo
	}{
		{name: "http, no answer", repo: func(addr string) Repo { return Repo{URL: "http://" + addr + "/org/apps.git", Branch: testBranch} }},
		{name: "http, answer stalls", headers: true, repo: func(addr string) Repo { return Repo{URL: "http://" + addr + "/org/apps.git", Branch: testBranch} }},
		{name: "ssh, no banner", repo: func(addr string) Repo {
			url := "ssh://git@" + addr + "/org/apps.git"
			host, port, _ := net.SplitHostPort(addr)
			auth, err := AuthFromSecretData(url, map[string][]byte{"identity": identity,
				"known_hosts": []byte(knownhosts.Line([]string{knownhosts.Normalize(net.JoinHostPort(host, port))}, otherRSAKey(t)))})
			if err != nil {
				t.Fatal(err)
			}
			return Repo{URL: url, Branch: testBranch, Auth: auth}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			addr, conns := silentServer(t, tc.headers)
			w := newTestWriter(t, WithTimeout(time.Second), WithBackoff(Backoff{Initial: time.Millisecond, Max: time.Millisecond, Attempts: 1}))
			p, err := w.Submit(context.Background(), tc.repo(addr), appChange("web", map[string]string{"a.yaml": "x"}), nil)
			g.Expect(err).NotTo(HaveOccurred())
			g.Eventually(p.Done(), 20*time.Second).Should(BeClosed(), "the batch outlived its timeout")
			_, err = p.Result()
			g.Expect(err).To(HaveOccurred())
			g.Expect(conns.Load()).To(BeNumerically(">=", 1), "the server was never contacted")
		})
	}
}

// SameFolderKnown answers from the cache or the clone only: never for a branch the Writer does
// not hold, a commit its clone lacks, or while a batch holds the clone; and never fetching.
func TestSameFolderKnownNeverWaitsOrFetches(t *testing.T) {
	g := NewWithT(t)
	srv := newServer(t)
	repo := testRepo(srv)
	gate := newPushGate(t)
	w := newTestWriter(t, gate.option())
	// known asks until the clone is free (a batch's goroutine may hold it a moment after its
	// callers have their outcome).
	known := func(a, b string) (same bool) {
		t.Helper()
		g.Eventually(func() bool {
			var ok bool
			same, ok, _ = w.SameFolderKnown(repo, "apps/ns/web", a, b)
			return ok
		}).Should(BeTrue(), "not known: %s %s", a, b)
		return same
	}

	_, ok, freed := w.SameFolderKnown(repo, "apps/ns/web", strings.Repeat("1", 40), strings.Repeat("2", 40))
	g.Expect(ok).To(BeFalse(), "a branch the Writer never wrote")
	g.Expect(freed).To(BeNil())

	first := apply(t, w, repo, appChange("web", map[string]string{"a.yaml": "1"}))
	other := apply(t, w, repo, appChange("api", map[string]string{"a.yaml": "1"}))
	second := apply(t, w, repo, appChange("web", map[string]string{"a.yaml": "2"}))
	g.Expect(known(first.Commit, other.Commit)).To(BeTrue(), "another app's commit left the folder as it was")
	g.Expect(known(other.Commit, second.Commit)).To(BeFalse())

	// A commit pushed by someone else is not in the clone: not known, and not fetched for.
	outside := apply(t, newTestWriter(t), repo, appChange("web", map[string]string{"a.yaml": "3"}))
	for range 2 {
		g.Eventually(func() bool {
			_, ok, freed := w.SameFolderKnown(repo, "apps/ns/web", second.Commit, outside.Commit)
			return !ok && freed == nil
		}).Should(BeTrue(), "the outside commit is known, or was fetched for")
	}

	// While a batch holds the clone: what is cached is known, the rest is not, with a channel
	// closed once the clone is free.
	fourth := apply(t, w, repo, appChange("api", map[string]string{"a.yaml": "2"}))
	gate.armed.Store(true)
	held := submit(g, w, repo, "third", "x")
	<-gate.waiting
	_, ok, _ = w.SameFolderKnown(repo, "apps/ns/web", first.Commit, other.Commit)
	g.Expect(ok).To(BeTrue(), "a cached answer")
	_, ok, freed = w.SameFolderKnown(repo, "apps/ns/web", first.Commit, fourth.Commit)
	g.Expect(ok).To(BeFalse(), "the clone is in use")
	g.Expect(freed).NotTo(BeNil())
	g.Expect(freed).NotTo(BeClosed())
	gate.open()
	<-held.Done()
	g.Eventually(freed).Should(BeClosed())
	g.Expect(known(first.Commit, fourth.Commit)).To(BeFalse(), "the outside commit changed the folder")
}
