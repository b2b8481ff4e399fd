package olminstall

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// inNetNSEnv marks the re-executed test binary running in its private network namespace.
const inNetNSEnv = "KUBEOPERA_OLMINSTALL_NETNS"

// managerBinEnv passes the manager binary built before the re-exec.
const managerBinEnv = "KUBEOPERA_OLMINSTALL_MANAGER"

// tools are the directories of the binaries the suite runs.
var tools struct {
	envtest, olm, opm, manager string
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Fprintln(os.Stderr, "SKIP olminstall: -short")
		os.Exit(0)
	}
	if os.Getenv(inNetNSEnv) == "" {
		os.Exit(reexecInNetNS())
	}
	if err := findTools(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL olminstall:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// reexecInNetNS builds the manager binary, then runs this test binary again, with the same
// arguments, in a new network namespace with only loopback up.
func reexecInNetNS() int {
	dir, err := os.MkdirTemp("", "olminstall-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL olminstall:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := testenv.BuildManager(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL olminstall: build the manager:", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL olminstall:", err)
		return 1
	}
	unshare := []string{"-n"}
	if os.Getuid() != 0 {
		unshare = []string{"-r", "-n"}
	}
	args := append(unshare, "--", "/bin/sh", "-c", `ip link set lo up && exec "$@"`, "sh", self)
	args = append(args, os.Args[1:]...)
	// The child is this test binary; it ends on its own -test.timeout.
	cmd := exec.CommandContext(context.Background(), "unshare", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), inNetNSEnv+"=1", managerBinEnv+"="+bin)
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "FAIL olminstall: run in a network namespace (needs unshare and ip):", err)
		return 1
	}
	return 0
}

// findTools fails when a binary is missing: `make test` builds them (envtest-assets, olm, opm).
func findTools() error {
	tools.envtest = testenv.AssetsDir()
	tools.olm = testenv.ToolDir("olm")
	tools.opm = testenv.ToolDir("opm")
	tools.manager = os.Getenv(managerBinEnv)
	var missing []string
	for _, p := range []string{
		filepath.Join(tools.envtest, "kube-apiserver"), filepath.Join(tools.envtest, "etcd"),
		filepath.Join(tools.olm, "olm"), filepath.Join(tools.olm, "catalog"), filepath.Join(tools.olm, "crds"),
		filepath.Join(tools.opm, "opm"), tools.manager,
	} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: run `make envtest-assets olm opm` (or `make test`)", strings.Join(missing, ", "))
	}
	return nil
}
