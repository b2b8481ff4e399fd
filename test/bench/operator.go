package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// buildOperator builds the manager from main.go, as it ships, into dir.
func buildOperator(ctx context.Context, dir string) (string, error) {
	return testenv.BuildManager(ctx, dir)
}

// operator is the manager running as its own process, so its memory is its own.
type operator struct {
	*testenv.Process
	// pprof is the address of its pprof endpoint, "" when off (see -heap-profile).
	pprof string
}

// startOperator runs bin against the cluster of kubeconfig, with its default options except the
// addresses and the Git cache directory, and waits for /readyz. proxy is the HTTP proxy the
// process reaches the Controller APIs through (see controllerNet).
func startOperator(ctx context.Context, bin, kubeconfig, workDir, proxy string, extraEnv ...string) (*operator, error) {
	return startOperatorWith(ctx, bin, kubeconfig, workDir, proxy, nil, extraEnv...)
}

// startOperatorWith is startOperator with extra command-line flags (P5 scales the operator's
// resync and sync poll with its played Flux interval and reads goroutines from pprof).
func startOperatorWith(ctx context.Context, bin, kubeconfig, workDir, proxy string, extraArgs []string, extraEnv ...string) (*operator, error) {
	probe, err := testenv.FreeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workDir, 0o750); err != nil {
		return nil, err
	}
	env := append(testenv.Environ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "WATCH_NAMESPACE", "KUBECONFIG"),
		"KUBECONFIG="+kubeconfig, "HTTP_PROXY="+proxy, "http_proxy="+proxy)
	args := []string{
		"--metrics-bind-address=0", "--health-probe-bind-address=" + probe,
		"--git-cache-dir=" + filepath.Join(workDir, "git"),
		// The test Git server is plain HTTP on loopback.
		"--app-allow-insecure-git-http",
	}
	var pprofAddr string
	if heapProfileDir != "" {
		if pprofAddr, err = testenv.FreeAddr(); err != nil {
			return nil, err
		}
		args = append(args, "--pprof-bind-address="+pprofAddr)
	}
	args = append(args, extraArgs...)
	p, err := testenv.StartProcess(bin, args, filepath.Join(workDir, "operator.log"), testenv.ProcessOptions{
		Env: append(env, extraEnv...), Context: ctx, WaitDelay: 15 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("start the operator: %w", err)
	}
	o := &operator{Process: p, pprof: pprofAddr}
	deadline := time.Now().Add(60 * time.Second)
	for testenv.Ready(ctx, probe) != nil {
		select {
		case <-o.Done():
			return nil, fmt.Errorf("the operator exited before it was ready (log: %s): %w", o.Log, o.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			o.stop()
			return nil, fmt.Errorf("the operator was not ready within 60s; log: %s", o.Log)
		}
	}
	return o, nil
}

func (o *operator) pid() int { return o.Pid() }

// heapProfile writes the operator's heap profile (after a collection) to path; nothing when
// its pprof endpoint is off.
func (o *operator) heapProfile(ctx context.Context, path string) error {
	return o.profile(ctx, "heap?gc=1", path)
}

// cpuProfile writes the operator's CPU profile of the next d to path; nothing when its pprof
// endpoint is off.
func (o *operator) cpuProfile(ctx context.Context, d time.Duration, path string) error {
	return o.profile(ctx, fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), path)
}

// profile writes the pprof endpoint's answer to query (under /debug/pprof/) to path.
func (o *operator) profile(ctx context.Context, query, path string) error {
	if o.pprof == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+o.pprof+"/debug/pprof/"+query, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", query, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", query, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.Create(path) //nolint:gosec // G304: a path under the directory given by -heap-profile
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// memory returns the current and the peak resident set size of the process, in MiB.
func (o *operator) memory() (rss, peak float64, err error) {
	st, err := procStatus(o.pid())
	if err != nil {
		return 0, 0, err
	}
	return st["VmRSS"], st["VmHWM"], nil
}

// rssParts returns the current resident set's anonymous memory (the Go runtime's heap, stacks
// and metadata) and its file-backed pages (the binary's code and read-only data), in MiB.
func (o *operator) rssParts() (anon, file float64, err error) {
	st, err := procStatus(o.pid())
	if err != nil {
		return 0, 0, err
	}
	return st["RssAnon"], st["RssFile"], nil
}

// procStatus returns the kB fields of /proc/<pid>/status, in MiB, by name without the colon.
func procStatus(pid int) (map[string]float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || fields[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		out[strings.TrimSuffix(fields[0], ":")] = kb / 1024
	}
	if out["VmRSS"] == 0 {
		return nil, errors.New("no VmRSS in /proc status")
	}
	return out, sc.Err()
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
	if o == nil {
		return
	}
	o.Stop(syscall.SIGTERM, 20*time.Second)
}
