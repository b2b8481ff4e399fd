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
	"path/filepath"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// ErrMissingTool means a prebuilt test dependency (envtest binaries, Flux controllers, git) is
// not there. A suite fails on it, unless run with -short (testenv.MaySkipMissingTools).
var ErrMissingTool = errors.New("test tool missing")

// Root is the repository root.
func Root() string { return testenv.Root() }

// Scheme has every type the App Controller's tests read or write.
func Scheme() *k8sruntime.Scheme { return testenv.Scheme() }

// Cluster is one running API server (envtest) with an admin client.
type Cluster = testenv.Env

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
	c, err := testenv.Start(testenv.Options{CRDDirs: crdDirs})
	if errors.Is(err, testenv.ErrNoAssets) {
		return nil, fmt.Errorf("%w: %w", ErrMissingTool, err)
	}
	return c, err
}

// FluxDir is the directory of the Flux controller binaries and their CRDs (crds/): FLUX_BIN_DIR
// (set by the Makefile), or the tool cache of hack/tool.sh. It must hold the build's .complete
// stamp.
func FluxDir() (string, error) {
	return toolDir("FLUX_BIN_DIR", "flux", "Flux controllers not built", "flux-controllers")
}

// FluxCRDDir is the directory of the Flux CRDs (source-controller's and kustomize-controller's):
// crds/ of FLUX_CRD_DIR (set by the Makefile), or of the tool cache of hack/tool.sh (flux-crds).
// The suites that install the CRDs without running Flux use it, so `make test` extracts them
// from the Go modules instead of building the controllers.
func FluxCRDDir() (string, error) {
	dir, err := toolDir("FLUX_CRD_DIR", "flux-crds", "Flux CRDs not extracted", "flux-crds")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "crds"), nil
}

// CertManagerCRDDir is the directory of cert-manager's Certificate CRD: crds/ of CERT_MANAGER_DIR
// (set by the Makefile), or of the tool cache of hack/tool.sh. Tests install it in a vCluster to
// read Certificates back as cert-manager writes them; cert-manager itself does not run.
func CertManagerCRDDir() (string, error) {
	dir, err := toolDir("CERT_MANAGER_DIR", "cert-manager", "cert-manager CRD not extracted", "cert-manager-crds")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "crds"), nil
}

// toolDir is the directory of a hack/tool.sh tool: the environment variable env (set by the
// Makefile), or the tool cache. It must hold the build's .complete stamp; otherwise the error
// (ErrMissingTool) says what is missing and which make target provides it.
func toolDir(env, tool, missing, target string) (string, error) {
	dir := os.Getenv(env)
	if dir == "" {
		dir = testenv.ToolDir(tool)
	}
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil { //nolint:gosec // G703: test tool directory from the environment
		return "", fmt.Errorf("%w: %s in %q: run `make %s`", ErrMissingTool, missing, dir, target)
	}
	return dir, nil
}

// ExitCode decides what a test does when its setup failed: skip (0) when a tool is missing and
// the run is -short, fail (1) otherwise: `make test` builds every tool it needs, so a missing one
// is a broken setup, never a reason to pass.
func ExitCode(err error) int {
	if errors.Is(err, ErrMissingTool) && testenv.MaySkipMissingTools() {
		fmt.Fprintln(os.Stderr, "SKIP suite:", err)
		return 0
	}
	fmt.Fprintln(os.Stderr, "FAIL suite setup:", err)
	return 1
}
