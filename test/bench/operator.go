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
		// The test Git server is plain HTTP on loopback, and it and the vClusters' API servers
		// listen on loopback, which the default allow-lists refuse.
		"--app-allow-insecure-git-http",
		"--app-allowed-git-hosts=127.0.0.1", "--app-allowed-vcluster-servers=127.0.0.1",
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

// clockTicks is the unit of the CPU times in /proc (USER_HZ, 100 on Linux for every
// architecture the bench runs on).
const clockTicks = 100

// cpuTime returns the CPU time the process has used so far (user and system, /proc/<pid>/stat).
func (o *operator) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", o.pid()))
	if err != nil {
		return 0, err
	}
	// The fields after the command (in parentheses, which may hold spaces): utime and stime are
	// the 12th and 13th after it.
	_, rest, ok := strings.Cut(string(b), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, errors.New("unexpected /proc stat")
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// machineCPU returns the machine's busy and total CPU time so far, all cores (/proc/stat).
func machineCPU() (busy, total time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0, 0, errors.New("unexpected /proc/stat")
	}
	var ticks [10]int64
	for i, f := range fields[1:min(len(fields), 11)] {
		if ticks[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return 0, 0, err
		}
	}
	// user nice system idle iowait irq softirq steal (guest time is counted in user already).
	var all int64
	for _, t := range ticks[:8] {
		all += t
	}
	idle := ticks[3] + ticks[4]
	return time.Duration(all-idle) * time.Second / clockTicks, time.Duration(all) * time.Second / clockTicks, nil
}

// cpuReading is the CPU time the operator and the machine used between two points.
type cpuReading struct {
	op, busy, total time.Duration
}

// readCPU returns the operator's and the machine's CPU counters now.
func (o *operator) readCPU() (cpuReading, error) {
	op, err := o.cpuTime()
	if err != nil {
		return cpuReading{}, err
	}
	busy, total, err := machineCPU()
	return cpuReading{op: op, busy: busy, total: total}, err
}

// since is the CPU used from earlier to r, as text: the operator's CPU seconds and how busy the
// machine's cores were.
func (r cpuReading) since(earlier cpuReading) string {
	busy := 0.0
	if d := r.total - earlier.total; d > 0 {
		busy = 100 * float64(r.busy-earlier.busy) / float64(d)
	}
	return fmt.Sprintf("operator CPU %.0f s, cores %.0f%% busy", (r.op - earlier.op).Seconds(), busy)
}
