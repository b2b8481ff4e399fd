package apptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Flux is the two Flux controllers running as child processes.
type Flux struct {
	procs []*proc
	// LogDir holds each controller's output (<name>.log).
	LogDir string
}

// proc is one controller process. A goroutine waits for it from the start, so an exit is
// noticed while the test runs (exec.Cmd's ProcessState is only set by Wait).
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	// err is Wait's result, set before done is closed.
	err error
}

func (p *proc) name() string { return filepath.Base(p.cmd.Path) }

// StartFlux runs source-controller and kustomize-controller from binDir against the cluster of
// the kubeconfig file, watching all namespaces, with loopback addresses on free ports.
func StartFlux(ctx context.Context, binDir, kubeconfig, workDir string) (*Flux, error) {
	f := &Flux{LogDir: workDir}
	storage := filepath.Join(workDir, "storage")
	if err := os.MkdirAll(storage, 0o750); err != nil {
		return nil, fmt.Errorf("create storage dir: %w", err)
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	common := []string{"--watch-all-namespaces=true", "--enable-leader-election=false", "--events-addr=", "--log-level=debug"}
	storageAddr := fmt.Sprintf("127.0.0.1:%d", ports[2])
	specs := []struct {
		name string
		args []string
	}{
		{"source-controller", append([]string{
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[0]),
			fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[1]),
			"--storage-path=" + storage, "--storage-addr=" + storageAddr, "--storage-adv-addr=" + storageAddr,
		}, common...)},
		{"kustomize-controller", append([]string{
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", ports[3]),
			fmt.Sprintf("--health-addr=127.0.0.1:%d", ports[4]),
		}, common...)},
	}
	for _, s := range specs {
		logFile, err := os.Create(filepath.Join(workDir, s.name+".log")) //nolint:gosec // G304: the test's own temporary directory
		if err != nil {
			f.Stop()
			return nil, fmt.Errorf("create log: %w", err)
		}
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, s.name), s.args...) //nolint:gosec // binaries of the pinned Flux build
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUNTIME_NAMESPACE=flux-system")
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		if err := f.run(cmd, logFile); err != nil {
			f.Stop()
			return nil, fmt.Errorf("start %s: %w", s.name, err)
		}
	}
	return f, nil
}

// run starts cmd and a goroutine that waits for it; logFile is closed when it exits.
func (f *Flux) run(cmd *exec.Cmd, logFile *os.File) error {
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	f.procs = append(f.procs, p)
	return nil
}

// Stop terminates the controllers (SIGTERM, then SIGKILL after 10s) and waits for them. It must
// run before the API server stops: the controllers would otherwise retry against a dead server.
func (f *Flux) Stop() {
	for _, p := range f.procs {
		if p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range f.procs {
		select {
		case <-p.done: // a controller stopped by a signal exits non-zero
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	f.procs = nil
}

// Exited returns an error when a controller has exited (it must run until Stop).
func (f *Flux) Exited() error {
	var errs []error
	for _, p := range f.procs {
		select {
		case <-p.done:
			errs = append(errs, fmt.Errorf("%s exited (see %s.log): %w", p.name(), p.name(), p.err))
		default:
		}
	}
	return errors.Join(errs...)
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		listeners = append(listeners, l)
		addr, ok := l.Addr().(*net.TCPAddr)
		if !ok {
			return nil, errors.New("not a TCP address")
		}
		ports = append(ports, addr.Port)
	}
	return ports, nil
}
