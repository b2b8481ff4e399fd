package apptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// Flux is the two Flux controllers running as child processes.
type Flux struct {
	procs []*testenv.Process
	// LogDir holds each controller's output (<name>.log).
	LogDir string
}

// FluxOptions are what a test changes in how the controllers run.
type FluxOptions struct {
	// KustomizeControllerArgs are added to kustomize-controller's flags, e.g. the
	// multi-tenancy lockdown (LockdownArgs).
	KustomizeControllerArgs []string
}

// LockdownArgs are kustomize-controller's multi-tenancy lockdown flags, as Flux's multi-tenancy
// guide sets them: a Kustomization may not name a source in another namespace, and one that
// names no ServiceAccount is applied as the "default" ServiceAccount of its namespace (no
// rights) instead of the controller's own.
var LockdownArgs = []string{"--no-cross-namespace-refs=true", "--default-service-account=default"}

// StartFlux runs source-controller and kustomize-controller from binDir against the cluster of
// the kubeconfig file, watching all namespaces, with loopback addresses on free ports.
func StartFlux(ctx context.Context, binDir, kubeconfig, workDir string) (*Flux, error) {
	return StartFluxWith(ctx, binDir, kubeconfig, workDir, FluxOptions{})
}

// StartFluxWith is StartFlux with options.
func StartFluxWith(ctx context.Context, binDir, kubeconfig, workDir string, o FluxOptions) (*Flux, error) {
	f := &Flux{LogDir: workDir}
	storage := filepath.Join(workDir, "storage")
	if err := os.MkdirAll(storage, 0o750); err != nil {
		return nil, fmt.Errorf("create storage dir: %w", err)
	}
	ports, err := testenv.FreePorts(5)
	if err != nil {
		return nil, err
	}
	common := []string{"--watch-all-namespaces=true", "--enable-leader-election=false", "--events-addr=", "--log-level=debug"}
	storageAddr := testenv.LoopbackAddr(ports[2])
	specs := []struct {
		name string
		args []string
	}{
		{"source-controller", append([]string{
			"--metrics-addr=" + testenv.LoopbackAddr(ports[0]),
			"--health-addr=" + testenv.LoopbackAddr(ports[1]),
			"--storage-path=" + storage, "--storage-addr=" + storageAddr, "--storage-adv-addr=" + storageAddr,
		}, common...)},
		{"kustomize-controller", append(append([]string{
			"--metrics-addr=" + testenv.LoopbackAddr(ports[3]),
			"--health-addr=" + testenv.LoopbackAddr(ports[4]),
		}, common...), o.KustomizeControllerArgs...)},
	}
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "RUNTIME_NAMESPACE=flux-system")
	for _, s := range specs {
		if err := f.run(ctx, filepath.Join(binDir, s.name), s.args, env); err != nil {
			f.Stop()
			return nil, err
		}
	}
	return f, nil
}

// run starts one controller, its output to <LogDir>/<name>.log; ctx's end stops it (SIGTERM,
// then SIGKILL after 10s).
func (f *Flux) run(ctx context.Context, bin string, args, env []string) error {
	p, err := testenv.StartProcess(bin, args, filepath.Join(f.LogDir, filepath.Base(bin)+".log"), testenv.ProcessOptions{
		Env: env, Context: ctx, WaitDelay: 10 * time.Second,
	})
	if err != nil {
		return err
	}
	f.procs = append(f.procs, p)
	return nil
}

// Stop terminates the controllers (SIGTERM, then SIGKILL after 10s) and waits for them. It must
// run before the API server stops: the controllers would otherwise retry against a dead server.
func (f *Flux) Stop() {
	for _, p := range f.procs {
		_ = p.Signal(syscall.SIGTERM)
	}
	for _, p := range f.procs {
		p.Stop(syscall.SIGTERM, 10*time.Second) // a controller stopped by a signal exits non-zero
	}
	f.procs = nil
}

// Exited returns an error when a controller has exited (it must run until Stop).
func (f *Flux) Exited() error {
	var errs []error
	for _, p := range f.procs {
		errs = append(errs, p.Exited())
	}
	return errors.Join(errs...)
}
