package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/controllers/app"
	"github.com/kubeopera/kubeopera-operator/test/sandbox"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

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

	bin, err := testenv.GoBuild(t.Context(), filepath.Join("hack", "devenv"), filepath.Join(work, "devenv"))
	g.Expect(err).NotTo(HaveOccurred())

	p, err := testenv.StartProcess(bin, []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"},
		filepath.Join(t.TempDir(), "devenv.log"), testenv.ProcessOptions{Dir: work, Env: append(os.Environ(), "KUBECONFIG="+kubeconfigFile)})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(p.Kill)
	output := func() string { return p.TailLog(1 << 20) }

	g.Eventually(output, 30*time.Second, 100*time.Millisecond).Should(ContainSubstring("Running the operator against " + strings.TrimSuffix(cluster.Config.Host, "/")))
	// The operator is up when its reconcilers' workers start.
	g.Eventually(output, 30*time.Second, 100*time.Millisecond).Should(ContainSubstring(`"controller": "kubeoperaapp"`))
	g.Expect(childrenOf(p.Pid())).To(BeEmpty(), "make run started processes against a real cluster")
	g.Expect(output()).NotTo(ContainSubstring("sandbox"))
	_, err = os.Stat(filepath.Join(work, sandboxDir))
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "the sandbox directory was created: %v", err)
	err = cluster.Client.Get(context.Background(), client.ObjectKey{Name: sandbox.Namespace}, &corev1.Namespace{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the samples' namespace exists in the real cluster: %v", err)

	g.Expect(p.Signal(syscall.SIGINT)).To(Succeed())
	g.Expect(p.Err()).To(Succeed(), "%s", output())
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

// In the sandbox the app read-back interval is the sandbox's, unless the command line gives one:
// also when it gives the production default, which the flag shows.
func TestSandboxKeepsAnIntervalTheUserGave(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Duration
	}{
		{args: nil, want: sandbox.SyncPollInterval},
		{args: []string{"--app-sync-poll-interval=15s"}, want: 15 * time.Second},
		{args: []string{"--app-sync-poll-interval=" + app.DefaultSyncPollInterval.String()}, want: app.DefaultSyncPollInterval},
	} {
		g := NewWithT(t)
		opts := controllers.DefaultOptions()
		fs := flag.NewFlagSet("devenv", flag.ContinueOnError)
		controllers.BindFlags(fs, &opts)
		g.Expect(fs.Parse(tc.args)).To(Succeed())
		g.Expect(sandboxOptions(fs, opts).Apps.SyncPollInterval).To(Equal(tc.want), "args %v", tc.args)
	}
}
