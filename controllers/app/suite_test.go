package app_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/tenant"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// The suite runs the reconciler in a manager against a real host API server, with a second real
// API server standing in for the tenant vCluster (its kubeconfig goes into the exported Secret,
// as vcluster does) and a real Git server on loopback. Flux does not run here (test/e2e runs it):
// the tests read the Flux objects and write their status themselves. The vCluster serves
// cert-manager's Certificate kind (its CRD only: the tests write the status cert-manager would).
var (
	host, vcluster *apptest.Cluster
	gitServer      *apptest.GitServer
	reconciler     *app.Reconciler
	// vclusterKubeconfig is a cluster-admin kubeconfig of the vCluster API server.
	vclusterKubeconfig []byte
	// beforePush, when set, runs before every push of the Git writer.
	beforePush atomic.Pointer[func()]
	// onQueued, when set, runs after every change joined a Git writer queue.
	onQueued atomic.Pointer[func()]
	// onExpect and onUnexpect, when set, run on every announcement of a change to the Git writer
	// and every withdrawal (gitops.WithOnExpect).
	onExpect   atomic.Pointer[func(app string, repo gitops.Repo)]
	onUnexpect atomic.Pointer[func(app string)]
	// statusPatchHook, when set, runs before every status write of the manager's client; an
	// error it returns is the write's result (the API server is never asked).
	statusPatchHook atomic.Pointer[func(client.Object) error]
	// gitCacheDir is the Git writer's clone directory.
	gitCacheDir string
	// hostRequests and vclusterRequests count every request the reconciler sends to the host
	// and vCluster API servers (a counting transport: a no-op PATCH leaves no trace in
	// resourceVersions, but it is counted here).
	hostRequests, vclusterRequests = &requestCounter{}, &requestCounter{}
	// suiteSkipped is why the environment could not start when a tool is missing in a -short
	// run: the envtest tests skip, the unit tests of the package still run.
	suiteSkipped error
)

// Timings of the suite: short, so failures are retried quickly; the default values themselves
// are asserted by the unit tests.
var suiteOptions = app.Options{
	RetryBase:                  200 * time.Millisecond,
	RetryMax:                   2 * time.Second,
	SyncPollInterval:           time.Hour, // no Flux here: tests trigger the read-back
	ResyncInterval:             time.Hour,
	DeletePollInterval:         200 * time.Millisecond,
	KustomizationDeleteTimeout: 3 * time.Second,
	// More workers than apps in any test, so a gated push can have every app queued behind it.
	MaxConcurrentReconciles: 40,
	// Far above any test's apps, far below TestARepositoryOverTheInflatedLimitFailsOnlyItsApp's file.
	MaxGitInflatedSize: 4 << 20,
	// The test Git server is plain HTTP on loopback (TestCredentialsOverPlainHTTPAreRefused
	// checks the default).
	AllowInsecureGitHTTP: true,
	// The Git servers and the vCluster's API server listen on loopback, which the default
	// allow-lists refuse (TestAllowListsRefuseInternalHostsByDefault): the suite names it, as a
	// platform names its own hosts.
	AllowedGitHosts:        []string{"127.0.0.1"},
	AllowedVClusterServers: []string{"127.0.0.1"},
	// The Ingress allow-lists a platform sets (ingress_test.go); every other test's hosts and
	// issuers are in them.
	AllowedIngressHosts:   []string{"*.example.com", "*.{namespace}.tenants.test"},
	AllowedClusterIssuers: []string{"letsencrypt", "le"},
}

func TestMain(m *testing.M) {
	flag.Parse() // apptest.ExitCode reads -short
	testenv.SetDefaultParallel(suiteParallel)
	os.Exit(run(m))
}

// suiteParallel is how many parallel tests run at once unless -parallel is given. The suite's
// tests share the manager and its hooks, so they run one after the other; only the terminal rows
// of the bad-input matrix are parallel, and each of them mostly waits out a one-second quiet
// window, which eight at once share.
const suiteParallel = 8

func run(m *testing.M) int {
	code, started := setUp()
	if !started {
		if code != 0 {
			return code
		}
		return m.Run()
	}
	code = m.Run()
	return tearDown(code)
}

var (
	stopSuite    context.CancelFunc
	managerDone  <-chan error
	suiteCleanup []func()
)

// setUp starts the environment; started is false when it could not, and code says whether that
// is a failure (1) or a skip (0: the envtest tests skip, see suiteSkipped).
func setUp() (code int, started bool) {
	if testing.Short() {
		// -short runs the unit tests of the package only.
		suiteSkipped = errors.New("-short: the envtest suite does not run")
		return 0, false
	}
	fail := func(err error) (int, bool) {
		for i := len(suiteCleanup) - 1; i >= 0; i-- {
			suiteCleanup[i]()
		}
		if apptest.ExitCode(err) == 0 {
			suiteSkipped = err
			return 0, false
		}
		return 1, false
	}
	// The test Git server logs every request through the standard logger.
	log.SetOutput(io.Discard)
	if os.Getenv("KUBEOPERA_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	fluxCRDs, err := apptest.FluxCRDDir()
	if err != nil {
		return fail(err)
	}
	if host, err = apptest.StartCluster(apptest.HostCRDDirs(false)...); err != nil {
		return fail(err)
	}
	suiteCleanup = append(suiteCleanup, func() { stop("host", host.Stop) })
	certManagerCRDs, err := apptest.CertManagerCRDDir()
	if err != nil {
		return fail(err)
	}
	if vcluster, err = apptest.StartCluster(fluxCRDs, certManagerCRDs); err != nil {
		return fail(err)
	}
	suiteCleanup = append(suiteCleanup, func() { stop("vcluster", vcluster.Stop) })
	if vclusterKubeconfig, err = vcluster.Kubeconfig("vcluster-admin"); err != nil {
		return fail(err)
	}
	if gitServer, err = apptest.StartGitServer("git", "s3cr3t-git-pass"); err != nil {
		return fail(err)
	}
	suiteCleanup = append(suiteCleanup, gitServer.Stop)

	ctx, cancel := context.WithCancel(context.Background())
	if managerDone, err = startManager(ctx); err != nil {
		cancel()
		return fail(err)
	}
	stopSuite = cancel
	return 0, true
}

func tearDown(code int) int {
	stopSuite()
	if err := <-managerDone; err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		code = 1
	}
	code = host.CheckRBACUse(code, "controllers/app/rbac.go", rbacUnusedHere)
	for i := len(suiteCleanup) - 1; i >= 0; i-- {
		suiteCleanup[i]()
	}
	return code
}

func startManager(ctx context.Context) (<-chan error, error) {
	// The manager holds exactly the bundle's RBAC of an AllNamespaces install, not admin.
	cfg, err := host.ManagerConfig(ctx, "app-suite-manager")
	if err != nil {
		return nil, err
	}
	cfg.Wrap(hostRequests.wrap)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 apptest.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		NewClient: func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.New(cfg, o)
			return &hookedClient{Client: c}, err
		},
	})
	if err != nil {
		return nil, err
	}
	opts := suiteOptions
	cacheDir, err := os.MkdirTemp("", "app-suite-git-")
	if err != nil {
		return nil, err
	}
	opts.GitCacheDir, gitCacheDir = cacheDir, cacheDir
	scheme := mgr.GetScheme()
	newClient := tenant.NewClient(scheme)
	opts.NewVClusterClient = func(cfg *rest.Config, hc *http.Client) (client.Client, error) {
		hc.Transport = vclusterRequests.wrap(hc.Transport)
		return newClient(cfg, hc)
	}
	opts.OnPass = passes.add
	opts.GitOptions = []gitops.Option{
		gitops.WithBeforePush(func() {
			if f := beforePush.Load(); f != nil {
				(*f)()
			}
		}),
		gitops.WithOnQueued(func() {
			if f := onQueued.Load(); f != nil {
				(*f)()
			}
		}),
		gitops.WithOnExpect(func(app string, repo gitops.Repo) {
			if f := onExpect.Load(); f != nil {
				(*f)(app, repo)
			}
		}, func(app string) {
			if f := onUnexpect.Load(); f != nil {
				(*f)(app)
			}
		}),
	}
	if reconciler, err = app.NewReconciler(mgr, opts); err != nil {
		return nil, err
	}
	if err := reconciler.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() {
		done <- mgr.Start(ctx)
		_ = os.RemoveAll(cacheDir)
	}()
	return done, nil
}

func stop(what string, f func() error) {
	if err := f(); err != nil {
		fmt.Fprintf(os.Stderr, "stop %s: %v\n", what, err)
	}
}

// hookedClient is the manager's client with statusPatchHook in front of status writes: a test
// makes the API server "refuse" a status patch, as a crash between the side effects and the
// deferred patch would leave the status.
type hookedClient struct{ client.Client }

func (c *hookedClient) Status() client.SubResourceWriter {
	return hookedStatus{c.Client.Status()}
}

type hookedStatus struct{ client.SubResourceWriter }

func (s hookedStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if hook := statusPatchHook.Load(); hook != nil {
		if err := (*hook)(obj); err != nil {
			return err
		}
	}
	return s.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

// passes counts the reconciler's passes per app.
var passes = &passCounter{}

type passCounter struct {
	mu sync.Mutex
	n  map[types.NamespacedName]int
}

func (c *passCounter) add(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[types.NamespacedName]int{}
	}
	c.n[key]++
}

func (c *passCounter) of(ns, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[types.NamespacedName{Namespace: ns, Name: name}]
}

// requestCounter counts requests by "<METHOD> <path>".
type requestCounter struct {
	mu    sync.Mutex
	count map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		if c.count == nil {
			c.count = map[string]int{}
		}
		c.count[req.Method+" "+req.URL.Path]++
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// reset forgets every count.
func (c *requestCounter) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count = map[string]int{}
}

// writes returns the non-read requests whose path contains part, by "<METHOD> <path>".
func (c *requestCounter) writes(part string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.count {
		if !strings.HasPrefix(k, http.MethodGet+" ") && strings.Contains(k, part) {
			out[k] = n
		}
	}
	return out
}

// requestMark is a requestCounter's counts at one moment (mark), to count what came after it.
type requestMark map[string]int

// mark returns the counts so far.
func (c *requestCounter) mark() requestMark {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.count)
}

// writesSince returns the non-read requests made after m whose path holds segments as
// consecutive path segments (whole segments: "bad-1" does not match "bad-10"), by
// "<METHOD> <path>".
func (c *requestCounter) writesSince(m requestMark, segments ...string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.count {
		method, path, _ := strings.Cut(k, " ")
		if method == http.MethodGet || n == m[k] || !holdsSegments(path, segments) {
			continue
		}
		out[k] = n - m[k]
	}
	return out
}

// readsSince returns the GET requests made after m, by path.
func (c *requestCounter) readsSince(m requestMark) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.count {
		method, path, _ := strings.Cut(k, " ")
		if method != http.MethodGet || n == m[k] {
			continue
		}
		out[path] = n - m[k]
	}
	return out
}

// holdsSegments says whether the path (which starts with "/") holds want as consecutive segments.
func holdsSegments(path string, want []string) bool {
	return strings.Contains(strings.TrimSuffix(path, "/")+"/", "/"+strings.Join(want, "/")+"/")
}

// reads returns the number of GET requests whose path ends with suffix.
func (c *requestCounter) reads(suffix string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.count {
		if strings.HasPrefix(k, http.MethodGet+" ") && strings.HasSuffix(k, suffix) {
			n += v
		}
	}
	return n
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestRequestCounterCountsWholeSegmentsSinceAMark checks the counter the bad-input rows rely on
// when they run at once: only writes after the mark count, and "bad-1" is not "bad-10".
func TestRequestCounterCountsWholeSegmentsSinceAMark(t *testing.T) {
	c := &requestCounter{}
	ok := roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	send := func(method, path string) {
		req, err := http.NewRequestWithContext(t.Context(), method, "https://vc.example"+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.wrap(ok).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	send(http.MethodPatch, "/api/v1/namespaces/bad-1")
	m := c.mark()
	send(http.MethodPatch, "/api/v1/namespaces/bad-1")
	send(http.MethodDelete, "/api/v1/namespaces/bad-10")
	send(http.MethodGet, "/api/v1/namespaces/bad-1")
	send(http.MethodPost, "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/cs-bad-1")
	if got, want := c.writesSince(m, "namespaces", "bad-1"), map[string]int{"PATCH /api/v1/namespaces/bad-1": 1}; !maps.Equal(got, want) {
		t.Errorf("writes naming namespace bad-1 since the mark: got %v, want %v", got, want)
	}
	if got := c.writesSince(m, "cs-bad-1"); len(got) != 1 {
		t.Errorf("writes naming cs-bad-1 since the mark: got %v, want the Kustomization's POST", got)
	}
	if got := c.writesSince(c.mark(), "namespaces", "bad-1"); len(got) != 0 {
		t.Errorf("writes since a mark taken after them: got %v, want none", got)
	}
}
