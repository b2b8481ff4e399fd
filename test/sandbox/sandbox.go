package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/test/testbed"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// Options configure a sandbox.
type Options struct {
	// Dir holds what the sandbox writes: the two kubeconfigs, the Flux logs and storage, the
	// operator's Git cache. It is created when missing; earlier content is replaced.
	Dir string
	// SamplesDir holds the samples installed into namespace Namespace (default:
	// <repository>/config/samples).
	SamplesDir string
	// Manager are the operator's options, as make run parsed them. The sandbox sets the
	// Controller endpoint (its fake Controller), the Git cache (under Dir) and disables the
	// metrics and health listeners. A zero app read-back interval (Apps.SyncPollInterval) becomes
	// SyncPollInterval; a caller that starts from controllers.DefaultOptions sets it to
	// SyncPollInterval itself unless the user chose one (make run does), so the demo converges
	// in seconds.
	Manager controllers.Options
	// Log receives the stand-ins' logs (the operator logs through controller-runtime's global
	// logger, as in production).
	Log logr.Logger
}

// Sandbox is a running sandbox. Stop it with Stop.
type Sandbox struct {
	// Host is the operator's cluster, Tenant the tenant vCluster stand-in: clusters of the test
	// bed, whose pods are scheduled and reported running by kwok.
	Host, Tenant *testbed.Cluster
	// HostKubeconfig and TenantKubeconfig are kubeconfig files of cluster-admin users.
	HostKubeconfig, TenantKubeconfig string
	// Controller is the ioFog Controller API double every ControlPlane talks to.
	Controller *fake.Server
	// Git is the tenant apps Git server.
	Git *apptest.GitServer
	// Flux is the tenant's source-controller and kustomize-controller.
	Flux *apptest.Flux
	// Started is how long the start took.
	Started time.Duration

	log    logr.Logger
	notes  *noteRing
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	err    error
	done   chan struct{}
	once   sync.Once

	exposedMu sync.Mutex
	exposed   map[string]*http.Server
}

// Namespace is where the samples and their Secrets and Tenant are installed.
const Namespace = "demo"

const (
	// tenantRepo is the tenant apps repository on the sandbox Git server.
	tenantRepo = "tenant-a-apps"
	// gitUser is the sandbox Git server's user (the password is random per start).
	gitUser = "sandbox"
)

// SyncPollInterval is the app read-back interval in the sandbox: Flux there applies a commit in
// about a second (controllers/app DefaultSyncPollInterval, 2 minutes, in production).
const SyncPollInterval = time.Second

// Start starts every part of the sandbox, installs the samples and runs the operator against the
// host API server. On error, whatever did start is stopped again. The operator and the local
// cloud run until Stop, or until ctx is cancelled.
func Start(ctx context.Context, opts Options) (_ *Sandbox, retErr error) {
	begin := time.Now()
	log := opts.Log
	if opts.SamplesDir == "" {
		opts.SamplesDir = filepath.Join(testenv.Root(), "config", "samples")
	}
	// Fail before starting anything when a prebuilt part is missing.
	fluxDir, err := apptest.FluxDir()
	if err != nil {
		return nil, err
	}
	samples, err := readSamples(opts.SamplesDir)
	if err != nil {
		return nil, err
	}
	if err := resetDir(opts.Dir); err != nil {
		return nil, err
	}

	s := &Sandbox{log: log, notes: newNoteRing(8), done: make(chan struct{})}
	defer func() {
		if retErr != nil {
			_ = s.Stop()
		}
	}()

	if err := s.startClusters(ctx, opts.Dir, fluxDir); err != nil {
		return nil, err
	}
	if s.HostKubeconfig, err = writeKubeconfig(s.Host.Env, "developer", filepath.Join(opts.Dir, "kubeconfig")); err != nil {
		return nil, err
	}
	if s.TenantKubeconfig, err = writeKubeconfig(s.Tenant.Env, "vcluster-admin", filepath.Join(opts.Dir, "tenant.kubeconfig")); err != nil {
		return nil, err
	}
	tenantKubeconfig, err := os.ReadFile(s.TenantKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read tenant kubeconfig: %w", err)
	}

	if err := createFluxNamespace(ctx, s.Tenant.Env); err != nil {
		return nil, err
	}
	fluxWork := filepath.Join(opts.Dir, "flux")
	if err := os.MkdirAll(fluxWork, 0o750); err != nil {
		return nil, fmt.Errorf("create flux dir: %w", err)
	}
	// Flux's processes get their own context: they are stopped by Stop, before the tenant API
	// server, never by the caller's cancellation racing it.
	if s.Flux, err = apptest.StartFlux(context.WithoutCancel(ctx), fluxDir, s.TenantKubeconfig, fluxWork); err != nil {
		return nil, fmt.Errorf("start Flux: %w", err)
	}
	log.Info("Tenant Flux started", "logs", fluxWork)

	if s.Git, err = apptest.StartGitServer(gitUser, randomString()); err != nil {
		return nil, err
	}
	bootstrapPassword := randomString()
	s.Controller = fake.NewServer(fake.WithCredentials(samples.bootstrapUsername(), bootstrapPassword),
		fake.WithSecretReader(fake.KubernetesSecrets(s.Host.Client, Namespace)))
	log.Info(Simulated+" ioFog Controller API: the contract double internal/iofog/fake answers", "url", s.Controller.URL())

	if err := install(ctx, s.Host.Client, samples, installInputs{
		bootstrapPassword: bootstrapPassword,
		gitURL:            s.Git.URL(tenantRepo),
		gitSecret:         s.Git.SecretData(),
		gitReadOnlySecret: s.Git.ReadOnlySecretData(),
		tenantKubeconfig:  tenantKubeconfig,
	}, log); err != nil {
		return nil, err
	}

	mgrOpts, err := s.managerOptions(opts)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	ips := newAddressPool()
	var mgrs []manager.Manager
	for _, c := range []struct {
		name string
		cfg  *rest.Config
	}{{"host", s.Host.Config}, {"tenant", s.Tenant.Config}} {
		var expose func(context.Context, *corev1.Service, string) error
		if c.name == "host" {
			expose = s.exposeController
		}
		m, err := newCloudManager(c.name, c.cfg, ips, log, s.notes.add, expose)
		if err != nil {
			return nil, err
		}
		mgrs = append(mgrs, m)
	}
	op, err := controllers.New(s.Host.Config, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("create the operator's manager: %w", err)
	}
	mgrs = append(mgrs, op)
	for _, m := range mgrs {
		s.wg.Go(func() {
			if err := m.Start(runCtx); err != nil {
				s.fail(err)
			}
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			s.fail(nil)
		case <-runCtx.Done():
		}
	}()
	s.Started = time.Since(begin)
	return s, nil
}

// startClusters starts the host and tenant clusters of the test bed side by side (each takes a
// few seconds, mostly waiting for etcd, the API server and the nodes to answer); their logs are
// under dir.
func (s *Sandbox) startClusters(ctx context.Context, dir, fluxDir string) error {
	var wg sync.WaitGroup
	var hostErr, tenantErr error
	wg.Go(func() { s.Host, hostErr = startCluster(ctx, filepath.Join(dir, "host"), testenv.Options{}) })
	wg.Go(func() {
		s.Tenant, tenantErr = startCluster(ctx, filepath.Join(dir, "tenant"), testenv.Options{CRDDirs: []string{filepath.Join(fluxDir, "crds")}})
	})
	wg.Wait()
	if hostErr != nil {
		return fmt.Errorf("start the host cluster: %w", hostErr)
	}
	if tenantErr != nil {
		return fmt.Errorf("start the tenant cluster: %w", tenantErr)
	}
	return nil
}

func startCluster(ctx context.Context, dir string, api testenv.Options) (*testbed.Cluster, error) {
	return testbed.Start(ctx, testbed.Options{API: api, Dir: dir})
}

func (s *Sandbox) managerOptions(opts Options) (controllers.Options, error) {
	o := opts.Manager
	u, err := url.Parse(s.Controller.URL())
	if err != nil {
		return o, fmt.Errorf("parse the fake Controller URL: %w", err)
	}
	o.ControlPlane.ControllerEndpointTemplate = u.Host
	o.Apps.GitCacheDir = filepath.Join(opts.Dir, "git")
	// The sandbox Git server is plain HTTP on loopback. It and the tenant cluster's API server
	// listen on loopback, which the default allow-lists refuse: the sandbox names it, as a
	// platform names its own hosts.
	o.Apps.AllowInsecureGitHTTP = true
	o.Apps.AllowedGitHosts = []string{"127.0.0.1"}
	o.Apps.AllowedVClusterServers = []string{"127.0.0.1"}
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.LeaderElect = false
	if o.Apps.SyncPollInterval == 0 {
		o.Apps.SyncPollInterval = SyncPollInterval
	}
	return o, nil
}

// fail records the first error of a manager and stops the sandbox's goroutines.
func (s *Sandbox) fail(err error) {
	s.errMu.Lock()
	if s.err == nil && err != nil {
		s.err = err
	}
	s.errMu.Unlock()
	s.once.Do(func() { close(s.done) })
}

// Done is closed when a manager failed or the context given to Start was cancelled; Err then
// says why.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Err is the first manager error, nil when none failed.
func (s *Sandbox) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Stop stops everything the sandbox started, in order: the operator and the local cloud, Flux
// (before the tenant API server it talks to), the two API servers, the Git server and the fake
// Controller. It returns when every child process has exited and every listener is closed.
func (s *Sandbox) Stop() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	s.once.Do(func() { close(s.done) })
	var errs []error
	if s.Flux != nil {
		s.Flux.Stop()
		s.Flux = nil
	}
	for _, e := range []**testbed.Cluster{&s.Tenant, &s.Host} {
		if *e != nil {
			if err := (*e).Stop(); err != nil {
				errs = append(errs, err)
			}
			*e = nil
		}
	}
	s.exposedMu.Lock()
	for _, srv := range s.exposed {
		_ = srv.Close()
	}
	s.exposed = nil
	s.exposedMu.Unlock()
	if s.Git != nil {
		s.Git.Stop()
		s.Git = nil
	}
	if s.Controller != nil {
		s.Controller.Close()
		s.Controller = nil
	}
	return errors.Join(errs...)
}

// exposeController serves the fake Controller on the LoadBalancer address of a ControlPlane's
// Controller Service (each of its ports), where the reconciler's external reachability check
// looks for it. Other Services get an address only: their workloads do not run.
func (s *Sandbox) exposeController(ctx context.Context, svc *corev1.Service, ip string) error {
	if svc.Name != controllerServiceName || !ownedByControlPlane(svc) {
		return nil
	}
	s.exposedMu.Lock()
	defer s.exposedMu.Unlock()
	if s.exposed == nil {
		s.exposed = map[string]*http.Server{}
	}
	for _, p := range svc.Spec.Ports {
		addr := net.JoinHostPort(ip, strconv.Itoa(int(p.Port)))
		if _, ok := s.exposed[addr]; ok {
			continue
		}
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("serve the fake Controller on %s: %w", addr, err)
		}
		srv := &http.Server{Handler: s.Controller, ReadHeaderTimeout: 10 * time.Second}
		s.exposed[addr] = srv
		go func() { _ = srv.Serve(l) }()
		s.log.Info(Simulated+" ioFog Controller API: the fake Controller also answers on the LoadBalancer address",
			"service", svc.Namespace+"/"+svc.Name, "address", addr)
	}
	return nil
}

// controllerServiceName is the ControlPlane's Controller Service.
const controllerServiceName = "controller"

func ownedByControlPlane(o metav1.Object) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.Kind == "ControlPlane" && ref.Controller != nil && *ref.Controller {
			return true
		}
	}
	return false
}

// Notes are the last simulated writes of the local cloud, oldest first.
func (s *Sandbox) Notes() []string { return s.notes.list() }

func writeKubeconfig(env *testenv.Env, user, path string) (string, error) {
	kc, err := env.Kubeconfig(user)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", fmt.Errorf("write kubeconfig: %w", err)
	}
	return filepath.Abs(path)
}

// resetDir empties dir (what an earlier sandbox left: old kubeconfigs, Flux storage, Git cache).
func resetDir(dir string) error {
	if dir == "" {
		return errors.New("sandbox: Options.Dir is empty")
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

func randomString() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// noteRing keeps the last n notes.
type noteRing struct {
	mu    sync.Mutex
	n     int
	notes []string
}

func newNoteRing(n int) *noteRing { return &noteRing{n: n} }

func (r *noteRing) add(note string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, time.Now().Format("15:04:05")+" "+note)
	if len(r.notes) > r.n {
		r.notes = r.notes[len(r.notes)-r.n:]
	}
}

func (r *noteRing) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.notes...)
}
