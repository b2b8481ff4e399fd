// Package apptest holds the test fixtures of the App Controller: host and tenant API servers
// (envtest), a Git server on loopback, readers of what was pushed, and builders of Tenants,
// KubeOperaApps and kubeconfig Secrets. It is imported by tests only (controllers/app and the
// Flux end-to-end test in test/e2e); it does not depend on the manager package, so the App
// Controller's tests build on their own.
package apptest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// ErrMissingTool means a prebuilt test dependency (envtest binaries, Flux controllers, git) is
// not there. Outside CI a suite skips on it; under CI=true it fails.
var ErrMissingTool = errors.New("test tool missing")

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Scheme has every type the App Controller's tests read or write.
func Scheme() *k8sruntime.Scheme {
	s := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(kubeoperav1alpha1.AddToScheme(s))
	utilruntime.Must(tenantv1alpha1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	utilruntime.Must(kustomizev1.AddToScheme(s))
	return s
}

// Cluster is one running API server (envtest) with an admin client.
type Cluster struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
}

// HostCRDDirs are the CRDs of the host cluster: the operator's own, plus the Tenant fixture
// unless withoutTenant.
func HostCRDDirs(withoutTenant bool) []string {
	dirs := []string{filepath.Join(Root(), "config", "crd", "bases")}
	if !withoutTenant {
		dirs = append(dirs, filepath.Join(Root(), "test", "crds"))
	}
	return dirs
}

// StartCluster starts an API server with the CRDs of crdDirs installed.
func StartCluster(crdDirs ...string) (*Cluster, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = toolDir("envtest")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil { //nolint:gosec // G703: test tool directory from the environment
		return nil, fmt.Errorf("%w: no kube-apiserver in KUBEBUILDER_ASSETS=%q: run `make envtest-assets`", ErrMissingTool, assets)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("create client: %w", err)
	}
	return &Cluster{Env: env, Config: cfg, Client: c}, nil
}

// Stop stops the API server.
func (c *Cluster) Stop() error {
	if c == nil || c.Env == nil {
		return nil
	}
	return c.Env.Stop()
}

// Kubeconfig returns a kubeconfig of a new cluster-admin user with inline credentials, as a
// vcluster exports it.
func (c *Cluster) Kubeconfig(user string) ([]byte, error) {
	u, err := c.Env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("add user: %w", err)
	}
	return u.KubeConfig()
}

// FluxDir is the directory of the Flux controller binaries and their CRDs (crds/): FLUX_BIN_DIR
// (set by the Makefile), or the tool cache of hack/tool.sh. It must hold the build's .complete
// stamp.
func FluxDir() (string, error) {
	dir := os.Getenv("FLUX_BIN_DIR")
	if dir == "" {
		dir = toolDir("flux")
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil { //nolint:gosec // G703: test tool directory from the environment
		return "", fmt.Errorf("%w: Flux controllers not built in %q: run `make flux-controllers`", ErrMissingTool, dir)
	}
	return dir, nil
}

// toolDir asks hack/tool.sh where a tool lives ("" when that fails).
func toolDir(tool string) string {
	out, err := exec.Command(filepath.Join(Root(), "hack", "tool.sh"), "--dir", tool).Output() //nolint:gosec,noctx // fixed script of this repository, returns at once
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// ExitCode decides what a TestMain does when its setup failed: skip (0) when a tool is missing
// outside CI, fail (1) otherwise.
func ExitCode(err error) int {
	if errors.Is(err, ErrMissingTool) && os.Getenv("CI") != "true" {
		fmt.Fprintln(os.Stderr, "SKIP suite:", err)
		return 0
	}
	fmt.Fprintln(os.Stderr, "FAIL suite setup:", err)
	return 1
}
