package testenv

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// GoBuild builds the main package in pkgDir (relative to the repository root; "." is main.go)
// into out with the extra build flags, and returns out.
func GoBuild(ctx context.Context, pkgDir, out string, flags ...string) (string, error) {
	args := append(append([]string{"build"}, flags...), "-o", out, ".")
	cmd := exec.CommandContext(ctx, "go", args...) //nolint:gosec // G204: a package of this repository, the caller's output path
	cmd.Dir = filepath.Join(Root(), pkgDir)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w: %s", pkgDir, err, b)
	}
	return out, nil
}

// SetDefaultParallel sets -test.parallel (how many tests that call t.Parallel run at once) to n
// when the command line did not set it. Suites whose parallel tests mostly wait (for passes, for
// a quiet window) call it from TestMain after flag.Parse: Go's default is GOMAXPROCS, 2 on the
// machines this project's tiers are measured on.
func SetDefaultParallel(n int) {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", fmt.Sprint(n))
	}
}

// ManagerBinEnv names a manager binary built already: `make test-e2e` builds one with the race
// detector for all its suites, instead of each suite building its own.
const ManagerBinEnv = "MANAGER_BIN"

// BuildManager builds the manager from main.go, as it ships, into dir, or returns the binary
// ManagerBinEnv names.
func BuildManager(ctx context.Context, dir string) (string, error) {
	if bin := os.Getenv(ManagerBinEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil { //nolint:gosec // G703: a binary the Makefile built, named by the environment
			return "", fmt.Errorf("%s: %w", ManagerBinEnv, err)
		}
		return bin, nil
	}
	return GoBuild(ctx, ".", filepath.Join(dir, "kubeopera-operator"), "-trimpath")
}

// raceMarker starts every report of Go's race detector.
const raceMarker = "WARNING: DATA RACE"

// RaceReport is the first data race reported in a process's log, "" when there is none (or no
// log): a manager built with -race writes its reports to its output, and a suite that runs one
// fails on them.
func RaceReport(logPath string) string {
	b, err := os.ReadFile(logPath) //nolint:gosec // G304: the caller's own log file
	if err != nil {
		return ""
	}
	_, report, found := strings.Cut(string(b), raceMarker)
	if !found {
		return ""
	}
	if end := strings.Index(report, "=================="); end >= 0 {
		report = report[:end]
	}
	return raceMarker + report
}

// Environ is this process's environment without the named variables (compared without case, so
// "HTTP_PROXY" drops http_proxy too).
func Environ(drop ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, d := range drop {
			keep = keep && !strings.EqualFold(k, d)
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// ErrUnexpectedExit is a process that ended without the test stopping or killing it.
var ErrUnexpectedExit = errors.New("the process exited by itself")

// Process is a child process whose output goes to a log file. A goroutine waits for it from the
// start, so an exit is noticed while the test runs (exec.Cmd's ProcessState is only set by Wait).
type Process struct {
	cmd *exec.Cmd
	// Name names the process in errors; Log is the file its stdout and stderr go to.
	Name, Log string
	done      chan struct{}
	err       error // Wait's result, set before done is closed
	mu        sync.Mutex
	ended     bool // Stop or Kill was called
	stopOnce  sync.Once
}

// ProcessOptions are the optional parts of a Process.
type ProcessOptions struct {
	// Env is the environment (nil: this process's).
	Env []string
	// Dir is the working directory ("": this process's).
	Dir string
	// Append appends to Log instead of truncating it (a restarted process keeps one log).
	Append bool
	// Context, when set, stops the process when it is done: CancelSignal (SIGTERM when nil),
	// then SIGKILL after WaitDelay (10s when 0).
	Context      context.Context
	CancelSignal os.Signal
	WaitDelay    time.Duration
}

// StartProcess starts bin with args, its output to logPath.
func StartProcess(bin string, args []string, logPath string, opts ProcessOptions) (*Process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if opts.Append {
		flags = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	logFile, err := os.OpenFile(logPath, flags, 0o600) //nolint:gosec // G304: the caller's own directory
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	var cmd *exec.Cmd
	if opts.Context != nil {
		cmd = exec.CommandContext(opts.Context, bin, args...) //nolint:gosec // G204: the caller's binary
		sig := opts.CancelSignal
		if sig == nil {
			sig = syscall.SIGTERM
		}
		cmd.Cancel = func() error { return cmd.Process.Signal(sig) }
		cmd.WaitDelay = cmp.Or(opts.WaitDelay, 10*time.Second)
	} else {
		cmd = exec.Command(bin, args...) //nolint:gosec,noctx // G204: the caller's binary; it lives until Stop or Kill
	}
	cmd.Env, cmd.Dir = opts.Env, opts.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	p := &Process{cmd: cmd, Name: filepath.Base(bin), Log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the result of Wait once Done is closed (a stopped or killed process has a non-nil one).
func (p *Process) Err() error {
	<-p.done
	return p.err
}

// Exited reports an exit the test did not cause: nil while the process runs, and nil after Stop
// or Kill.
func (p *Process) Exited() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	if p.err == nil {
		return fmt.Errorf("%s: %w with status 0 (log %s)", p.Name, ErrUnexpectedExit, p.Log)
	}
	return fmt.Errorf("%s: %w (log %s): %w", p.Name, ErrUnexpectedExit, p.Log, p.err)
}

func (p *Process) markEnded() {
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Process) Kill() {
	p.markEnded()
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Stop sends sig (SIGTERM when 0), SIGKILL after grace, and waits for the process; it is
// idempotent and safe on a process that already exited.
func (p *Process) Stop(sig syscall.Signal, grace time.Duration) {
	if p == nil {
		return
	}
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	p.stopOnce.Do(func() {
		p.markEnded()
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.done:
		case <-time.After(grace):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// Signal sends sig without waiting.
func (p *Process) Signal(sig os.Signal) error {
	p.markEnded()
	return p.cmd.Process.Signal(sig)
}

// TailLog is the last n bytes of the log.
func (p *Process) TailLog(n int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
