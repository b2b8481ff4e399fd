// Package testenv starts real kube-apiserver + etcd test environments (controller-runtime envtest)
// with the project's CRDs, for the suites of every package. The binaries come from
// `make envtest-assets` (KUBEBUILDER_ASSETS); nothing is downloaded.
//
// It is also the one home of the helpers every test harness needs (test/chaos, test/bench,
// test/olminstall, test/metricsendpoint, internal/apptest, hack/devenv): free loopback ports
// and addresses (net.go), one GET for /metrics scrapes and /readyz probes, `go build` of the
// manager, and child processes with a log file, an exit noticed while the test runs, SIGKILL and
// graceful stop (process.go).
package testenv

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/scheme"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// ErrNoAssets means KUBEBUILDER_ASSETS is not set up. A suite fails on it (see MaySkipMissingTools),
// so a broken tool build can never pass as "no tests".
var ErrNoAssets = errors.New("KUBEBUILDER_ASSETS is not set or holds no kube-apiserver: run `make envtest-assets` or `make test`")

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Scheme has every type the tests read or write: the core types, CRDs, the project's APIs, the
// Tenant mirror and Flux's GitRepository and Kustomization. (It deliberately does not import the
// manager package, so the reconcilers' own tests can use this package.)
func Scheme() *k8sruntime.Scheme {
	s := scheme.New()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// AssetsDir is where the envtest binaries are: KUBEBUILDER_ASSETS (set by the Makefile), else the
// tool cache of hack/tool.sh, so `go test` works without make once the tools are built.
func AssetsDir() string {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir
	}
	return ToolDir("envtest")
}

// Kubectl is the kubectl the suites run: $KUBECTL_BIN when set (make passes the project's),
// else the kubectl tool of hack/tool.sh.
func Kubectl() string {
	if bin := os.Getenv("KUBECTL_BIN"); bin != "" {
		return bin
	}
	return filepath.Join(ToolDir("kubectl"), "kubectl")
}

// ToolDir asks hack/tool.sh where a tool lives ("" when that fails).
func ToolDir(tool string) string {
	out, err := exec.Command(filepath.Join(Root(), "hack", "tool.sh"), "--dir", tool).Output() //nolint:gosec,noctx // fixed script of this repository, returns at once
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Env is one running API server with a client.
type Env struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
	// AuditLog is the API server's audit log of the manager users' requests (see rbac_audit.go);
	// empty when Options.APIServerFlags configure an audit log of their own.
	AuditLog string
	auditDir string
	// usersMu serialises AddUser.
	usersMu sync.Mutex
	// refusalsMu guards refusals, the manager requests a test expects the RBAC to refuse
	// (ExpectRefused).
	refusalsMu sync.Mutex
	refusals   []expectedRefusal
}

// Options select what is installed.
type Options struct {
	// CRDDirs, when set, replace the default CRD directories (the operator's CRDs and the Tenant
	// fixture) entirely.
	CRDDirs []string
	// ExtraCRDDirs are installed besides the operator's own CRDs and the Tenant fixture.
	ExtraCRDDirs []string
	// WithoutTenantCRD leaves the Tenant fixture CRD out (the "CRD absent" case).
	WithoutTenantCRD bool
	// VanillaAdmission runs the API server with kube-apiserver's default admission plugins only,
	// without ExtraAdmissionPlugins: a vanilla Kubernetes cluster. Only for a test of a released
	// version that predates a grant the extra plugins require (the v0.1.0 bundle lacks update on
	// controlplanes/finalizers, so it never ran on OpenShift); everything else runs with them.
	VanillaAdmission bool
	// APIServerFlags are set on the kube-apiserver command line (e.g. the audit log, or
	// --advertise-address in a network namespace with only loopback).
	APIServerFlags map[string]string
	// StateDir, when set, keeps etcd's data (StateDir/etcd) and the API server's certificates
	// (StateDir/apiserver) there instead of in directories envtest removes on stop, so
	// StopAPIServer and StartAPIServer can restart the cluster on the same port with the same
	// objects, serving certificate and client CA (the caller removes the directory).
	StateDir string
}

// Start starts an API server with the operator's CRDs (config/crd/bases) and, unless told
// otherwise, the Tenant fixture CRD (test/crds).
func Start(opts Options) (*Env, error) {
	assets := AssetsDir()
	if assets == "" {
		return nil, ErrNoAssets
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoAssets, err)
	}
	dirs := opts.CRDDirs
	if dirs == nil {
		dirs = []string{filepath.Join(Root(), "config", "crd", "bases")}
		if !opts.WithoutTenantCRD {
			dirs = append(dirs, filepath.Join(Root(), "test", "crds"))
		}
	}
	dirs = append(dirs, opts.ExtraCRDDirs...)
	env := &envtest.Environment{
		CRDDirectoryPaths:     dirs,
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	if opts.StateDir != "" {
		// A restart stops the API server while clients hold watches open; the stop timeout is a
		// bound well above the 2 s drain (shutdown-send-retry-after below), not a wait.
		// (envtest sets each process's stop timeout from ControlPlaneStopTimeout.)
		env.ControlPlaneStopTimeout = 2 * time.Minute
		env.ControlPlane.Etcd = &envtest.Etcd{DataDir: filepath.Join(opts.StateDir, "etcd")}
		env.ControlPlane.GetAPIServer().CertDir = filepath.Join(opts.StateDir, "apiserver")
		for _, d := range []string{env.ControlPlane.Etcd.DataDir, env.ControlPlane.GetAPIServer().CertDir} {
			if err := os.MkdirAll(d, 0o750); err != nil {
				return nil, fmt.Errorf("create envtest state dir: %w", err)
			}
		}
	}
	e := &Env{Env: env}
	if _, own := opts.APIServerFlags["audit-policy-file"]; !own {
		if err := e.configureAudit(); err != nil {
			return nil, err
		}
	}
	// A stop (StopAPIServer, Stop) is a graceful shutdown, which waits for the open watches up to
	// the request timeout (60 s) unless the server sends Retry-After while draining: then the
	// HTTP server closes 2 s after the in-flight short requests drained, as the rolling restart
	// of an API server behind a load balancer does. Clients see their watches end and retry.
	env.ControlPlane.GetAPIServer().Configure().Set("shutdown-send-retry-after", "true")
	for k, v := range opts.APIServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(k, v)
	}
	if !opts.VanillaAdmission {
		env.ControlPlane.GetAPIServer().Configure().Set("enable-admission-plugins", admissionPlugins(opts.APIServerFlags["enable-admission-plugins"]))
	}
	cfg, err := env.Start()
	if err != nil {
		// A failed start (e.g. a CRD the API server rejects) can leave etcd and the API server
		// running: stop whatever did start.
		_ = e.Stop()
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("create client: %w", err)
	}
	e.Config, e.Client = cfg, c
	return e, nil
}

// ExtraAdmissionPlugins are enabled on every API server the suites start, in addition to
// kube-apiserver's default set (--enable-admission-plugins adds to the defaults; envtest itself
// only disables ServiceAccount):
//
//   - OwnerReferencesPermissionEnforcement, which OpenShift enables by default: setting
//     blockOwnerDeletion on an owner reference needs update on the owner's finalizers
//     subresource, and adding or removing an owner reference on an existing object needs delete
//     on that object. The manager runs with exactly the bundle's RBAC (ManagerConfig), so a
//     missing grant fails the suites' writes as it fails them on OpenShift.
var ExtraAdmissionPlugins = []string{"OwnerReferencesPermissionEnforcement"}

// admissionPlugins is the --enable-admission-plugins value: ExtraAdmissionPlugins and the plugins
// a caller's Options.APIServerFlags asked for (own, comma-separated), so a caller adds to the list
// and cannot drop one.
func admissionPlugins(own string) string {
	plugins := append([]string(nil), ExtraAdmissionPlugins...)
	for _, p := range strings.Split(own, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(plugins, p) {
			plugins = append(plugins, p)
		}
	}
	return strings.Join(plugins, ",")
}

// Stop stops the API server.
func (e *Env) Stop() error {
	if e == nil || e.Env == nil {
		return nil
	}
	err := e.Env.Stop()
	if e.auditDir != "" {
		_ = os.RemoveAll(e.auditDir)
	}
	return err
}

// StopAPIServer stops the API server and etcd (an outage of the whole cluster); with
// Options.StateDir, StartAPIServer brings them back as they were.
func (e *Env) StopAPIServer() error {
	return e.Env.ControlPlane.Stop()
}

// StartAPIServer starts the API server and etcd stopped by StopAPIServer again, on the same
// addresses; it returns once the API server answers its health check.
func (e *Env) StartAPIServer() error {
	return e.Env.ControlPlane.Start()
}

// AddUser is envtest's AddUser, safe for parallel tests: envtest's certificate authority counts
// its serial numbers without a lock, so the users are added one at a time.
func (e *Env) AddUser(user envtest.User, base *rest.Config) (*envtest.AuthenticatedUser, error) {
	e.usersMu.Lock()
	defer e.usersMu.Unlock()
	return e.Env.AddUser(user, base)
}

// Kubeconfig returns a kubeconfig of a new cluster-admin user with inline credentials, as a
// vcluster exports it.
func (e *Env) Kubeconfig(user string) ([]byte, error) {
	u, err := e.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("add user: %w", err)
	}
	return u.KubeConfig()
}

// MaySkipMissingTools is the one rule for a suite whose tools are missing: it fails, unless the
// run asked for -short (`make test-unit`), which means "no tools wanted". CI or not makes no
// difference: `make test` builds every tool first, so a missing one is a broken build.
// In a TestMain it parses the test flags first (m.Run has not done it yet).
func MaySkipMissingTools() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	return testing.Short()
}

// MainStart is the TestMain helper: it starts the environment, or returns (nil, exit code) when
// that is impossible — skipping (exit 0 with a message) under -short, failing otherwise.
func MainStart(opts Options) (*Env, int) {
	env, err := Start(opts)
	if err == nil {
		return env, -1
	}
	if errors.Is(err, ErrNoAssets) && MaySkipMissingTools() {
		fmt.Fprintln(os.Stderr, "SKIP envtest suite:", err)
		return nil, 0
	}
	fmt.Fprintln(os.Stderr, "FAIL envtest suite:", err)
	return nil, 1
}

// TB is the part of testing.TB the helpers need.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Cleanup(func())
}

// StartForTest starts an environment for one test and stops it when the test ends. Missing
// assets fail the test (skip it under -short).
func StartForTest(t TB, opts Options) *Env {
	t.Helper()
	env, err := Start(opts)
	if err != nil {
		if errors.Is(err, ErrNoAssets) && MaySkipMissingTools() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env
}
