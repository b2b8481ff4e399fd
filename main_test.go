package main

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/gomega"
)

// The manager binary is this test binary re-executed with RUN_MAIN=1, so the real main() runs
// with the environment under test.
func TestMain(m *testing.M) {
	if os.Getenv("KUBEOPERA_TEST_RUN_MAIN") == "1" {
		os.Args = []string{os.Args[0]}
		main()
		return
	}
	os.Exit(m.Run())
}

func runMain(t *testing.T, env ...string) (int, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{"KUBEOPERA_TEST_RUN_MAIN=1"}, env...)...)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("run main: %v", err)
	}
	return 0, string(out)
}

func TestInvalidWatchNamespaceExitsWithMessage(t *testing.T) {
	for _, value := range []string{"ns1,,ns2", "Bad_Namespace", ","} {
		t.Run(value, func(t *testing.T) {
			g := NewWithT(t)
			code, out := runMain(t, "WATCH_NAMESPACE="+value)
			g.Expect(code).To(Equal(2))
			g.Expect(out).To(ContainSubstring("invalid WATCH_NAMESPACE"))
		})
	}
}

func TestNoClusterExitsWithError(t *testing.T) {
	g := NewWithT(t)
	// A kubeconfig pointing nowhere: the manager cannot start and says so instead of hanging.
	dir := t.TempDir()
	kubeconfig := dir + "/kubeconfig"
	g.Expect(os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600)).To(Succeed())
	code, out := runMain(t, "KUBECONFIG="+kubeconfig, "WATCH_NAMESPACE=", "KUBERNETES_SERVICE_HOST=")
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(ContainSubstring("Unable to load a Kubernetes client configuration"))
}
