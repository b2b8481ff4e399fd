package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/test/sandbox"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// syncBuffer is a bytes.Buffer safe for the child's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRealClusterStartsNoSandbox: when $KUBECONFIG answers, make run's command runs the operator
// against that cluster and starts no part of the sandbox: no child process (no API server, no
// Flux), no sandbox directory, no samples installed.
func TestRealClusterStartsNoSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts an API server")
	}
	g := NewWithT(t)
	cluster, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred()) // missing envtest binaries fail: only -short skips
	t.Cleanup(func() { _ = cluster.Stop() })
	kubeconfig, err := cluster.Kubeconfig("developer")
	g.Expect(err).NotTo(HaveOccurred())
	work := t.TempDir()
	kubeconfigFile := filepath.Join(work, "kubeconfig")
	g.Expect(os.WriteFile(kubeconfigFile, kubeconfig, 0o600)).To(Succeed())

	bin := filepath.Join(work, "devenv")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(testenv.Root(), "hack", "devenv")
	out, err := build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", out)

	var output syncBuffer
	cmd := exec.CommandContext(context.Background(), bin, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigFile)
	cmd.Stdout, cmd.Stderr = &output, &output
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	g.Eventually(output.String, 30*time.Second, 100*time.Millisecond).Should(ContainSubstring("Running the operator against " + strings.TrimSuffix(cluster.Config.Host, "/")))
	// The operator is up when its reconcilers' workers start.
	g.Eventually(output.String, 30*time.Second, 100*time.Millisecond).Should(ContainSubstring(`"controller": "kubeoperaapp"`))
	g.Expect(childrenOf(cmd.Process.Pid)).To(BeEmpty(), "make run started processes against a real cluster")
	g.Expect(output.String()).NotTo(ContainSubstring("sandbox"))
	_, err = os.Stat(filepath.Join(work, sandboxDir))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the sandbox directory was created: %v", err)
	err = cluster.Client.Get(context.Background(), client.ObjectKey{Name: sandbox.Namespace}, &corev1.Namespace{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the samples' namespace exists in the real cluster: %v", err)

	g.Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
	g.Expect(cmd.Wait()).To(Succeed(), "%s", output.String())
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, e.Name())
		}
	}
	return out
}
