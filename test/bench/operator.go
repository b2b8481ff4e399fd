package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// buildOperator builds the manager from main.go, as it ships, into dir.
func buildOperator(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "kubeopera-operator")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".") //nolint:gosec // G204: the work directory of this run
	cmd.Dir = testenv.Root()
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the operator: %w", err)
	}
	return bin, nil
}

// operator is the manager running as its own process, so its memory is its own.
type operator struct {
	cmd      *exec.Cmd
	log      string
	done     chan struct{} // closed when the process has exited; err is then its exit error
	err      error
	stopOnce sync.Once
}

// startOperator runs bin against the cluster of kubeconfig, with its default options except the
// addresses and the Git cache directory, and waits for /readyz. proxy is the HTTP proxy the
// process reaches the Controller APIs through (see controllerNet).
func startOperator(ctx context.Context, bin, kubeconfig, workDir, proxy string, extraEnv ...string) (*operator, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workDir, 0o750); err != nil {
		return nil, err
	}
	logPath := filepath.Join(workDir, "operator.log")
	logFile, err := os.Create(logPath) //nolint:gosec // G304: the run's own directory
	if err != nil {
		return nil, err
	}
	probe := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.CommandContext(ctx, bin, //nolint:gosec // G204: the binary this run built
		"--metrics-bind-address=0", "--health-probe-bind-address="+probe,
		"--git-cache-dir="+filepath.Join(workDir, "git"))
	cmd.Env = append(filteredEnv(), "KUBECONFIG="+kubeconfig, "HTTP_PROXY="+proxy, "http_proxy="+proxy)
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start the operator: %w", err)
	}
	o := &operator{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		o.err = cmd.Wait()
		_ = logFile.Close()
		close(o.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+probe+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return o, nil
			}
		}
		select {
		case <-o.done:
			return nil, fmt.Errorf("the operator exited before it was ready (log: %s): %w", o.log, o.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			o.stop()
			return nil, fmt.Errorf("the operator was not ready within 60s; log: %s", o.log)
		}
	}
}

// filteredEnv is the benchmark's environment without proxy and namespace settings, which the
// operator gets explicitly.
func filteredEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "WATCH_NAMESPACE", "KUBECONFIG":
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (o *operator) pid() int { return o.cmd.Process.Pid }

// memory returns the current and the peak resident set size of the process, in MiB.
func (o *operator) memory() (rss, peak float64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", o.pid()))
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("no VmRSS in /proc status")
	}
	return rss, peak, sc.Err()
}

// settledRSS waits until the resident set stops changing (within 0.5 MiB over 3 s, at most 30 s)
// and returns it.
func (o *operator) settledRSS() (float64, error) {
	var samples []float64
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		rss, _, err := o.memory()
		if err != nil {
			return 0, err
		}
		samples = append(samples, rss)
		if n := len(samples); n >= 7 {
			lo, hi := samples[n-7], samples[n-7]
			for _, s := range samples[n-7:] {
				lo, hi = min(lo, s), max(hi, s)
			}
			if hi-lo <= 0.5 {
				return rss, nil
			}
		}
		time.Sleep(500 * time.Millisecond) // sampling period of a measurement, not a synchronisation
	}
	return samples[len(samples)-1], nil
}

// stop terminates the process (SIGTERM, SIGKILL after 20 s) and waits for it; it is idempotent.
func (o *operator) stop() {
	if o == nil || o.cmd.Process == nil {
		return
	}
	o.stopOnce.Do(func() {
		_ = o.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-o.done:
		case <-time.After(20 * time.Second):
			_ = o.cmd.Process.Kill()
			<-o.done
		}
	})
}

func freePort() (int, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}
