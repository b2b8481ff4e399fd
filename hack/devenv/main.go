// Command devenv is what `make run` runs: the operator's manager against the cluster of
// $KUBECONFIG when one answers (nothing else starts), otherwise the local sandbox of package
// test/sandbox: two local clusters of the test bed (host and tenant: API servers with the real
// controller manager and scheduler, nodes and pods played by kwok), the real Flux controllers, a
// Git server, the ioFog Controller API double and the load balancers and ingress addresses of a
// local cloud, with the samples installed, and a status view refreshed every second. The tools it
// needs are built on first use. docs/sandbox.md describes every part.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/test/sandbox"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

const (
	localDir     = ".local"
	sandboxDir   = localDir + "/sandbox"
	reachTimeout = 5 * time.Second
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := controllers.DefaultOptions()
	opts.ControlPlane.ControllerEndpointTemplate = envOr("CONTROLLER_ENDPOINT_TEMPLATE", opts.ControlPlane.ControllerEndpointTemplate)
	opts.Apps.GitCacheDir = filepath.Join(localDir, "git")
	fs := flag.NewFlagSet("devenv", flag.ContinueOnError)
	controllers.BindFlags(fs, &opts)
	local := fs.Bool("local", false, "Always start the local sandbox, even when $KUBECONFIG answers.")
	view := fs.Bool("sandbox-view", true, "In the sandbox, show the refreshing status view and write the logs to "+
		filepath.Join(localDir, "operator.log")+"; false keeps the logs on stderr.")
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	namespaces, err := controllers.ParseWatchNamespaces(os.Getenv("WATCH_NAMESPACE"))
	if err != nil {
		return err
	}
	opts.WatchNamespaces = namespaces
	opts.ControlPlane.Images = controllers.ImagesFromEnv(opts.ControlPlane.Images)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, source := remoteConfig(*local)
	if cfg != nil {
		ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
		fmt.Printf("Running the operator against %s (Ctrl-C to stop).\n", source)
		return start(ctx, cfg, opts)
	}

	fmt.Printf("No reachable cluster (%s): starting the local sandbox (see docs/sandbox.md).\n", source)
	return runSandbox(ctx, sandboxOptions(fs, opts), zapOpts, *view)
}

// remoteConfig returns the $KUBECONFIG (or in-cluster, or ~/.kube/config) configuration when its
// API server answers, and a description of what was tried.
func remoteConfig(forceLocal bool) (*rest.Config, string) {
	if forceLocal {
		return nil, "--local was given"
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, "no kubeconfig configured"
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = reachTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, fmt.Sprintf("kubeconfig unusable: %v", err)
	}
	if _, err := dc.ServerVersion(); err != nil {
		return nil, fmt.Sprintf("%s does not answer", cfg.Host)
	}
	return cfg, cfg.Host
}

func start(ctx context.Context, cfg *rest.Config, opts controllers.Options) error {
	mgr, err := controllers.New(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// syncPollFlag is the flag of the app read-back interval (controllers.BindFlags).
const syncPollFlag = "app-sync-poll-interval"

// sandboxOptions are the operator's options in the sandbox: as parsed by fs, with the sandbox's
// app read-back interval unless the command line chose one. The production interval waits
// minutes for a Flux that applies a commit in about a second.
func sandboxOptions(fs *flag.FlagSet, opts controllers.Options) controllers.Options {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == syncPollFlag })
	if !set {
		opts.Apps.SyncPollInterval = sandbox.SyncPollInterval
	}
	return opts
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// runSandbox starts the sandbox, shows the status view until ctx is cancelled (Ctrl-C) or the
// operator fails, then stops everything.
func runSandbox(ctx context.Context, opts controllers.Options, zapOpts zap.Options, view bool) error {
	if err := os.MkdirAll(localDir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", localDir, err)
	}
	logOut := io.Writer(os.Stderr)
	var logFile *os.File
	if view {
		// The sandbox directory is emptied by Start, so the log lives next to it.
		f, err := os.Create(filepath.Join(localDir, "operator.log"))
		if err != nil {
			return fmt.Errorf("create log file: %w", err)
		}
		logFile, logOut = f, f
		defer func() { _ = logFile.Close() }()
	}
	logger := zap.New(zap.UseFlagOptions(&zapOpts), zap.WriteTo(logOut))
	ctrl.SetLogger(logger)
	log.SetOutput(logOut) // the Git server logs each request with the standard logger

	if err := buildSandboxTools(); err != nil {
		return err
	}
	sb, err := sandbox.Start(ctx, sandbox.Options{Dir: sandboxDir, Manager: opts, Log: logger.WithName("sandbox")})
	if err != nil {
		return fmt.Errorf("start the sandbox: %w", err)
	}
	defer func() {
		fmt.Println("\nStopping the sandbox (operator, local cloud, Flux, API servers, Git server, fake Controller)...")
		if err := sb.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop:", err)
		}
		fmt.Println("Sandbox stopped; every process it started has exited.")
	}()
	fmt.Print(sb.Header())
	fmt.Printf("\nkubectl: %s\nPress Ctrl-C to stop.\n\n", testenv.Kubectl())
	if !view {
		<-sb.Done()
		return sb.Err()
	}
	fmt.Printf("Logs: %s\n", logFile.Name())
	tty := isTerminal(os.Stdout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := ""
	for {
		v, err := sb.Snapshot(ctx)
		var b strings.Builder
		if err != nil {
			fmt.Fprintf(&b, "(status not readable: %v)\n", err)
		}
		sandbox.Render(&b, v)
		if cur := b.String(); cur != last {
			last = cur
			if tty {
				fmt.Print("\033[H\033[2J" + sb.Header() + "\n")
			} else {
				fmt.Println("---")
			}
			fmt.Print(cur)
		}
		select {
		case <-sb.Done():
			return sb.Err()
		case <-tick.C:
		}
	}
}

// sandboxTools are the tools the sandbox runs (hack/tool.sh names): the API servers, the cluster's
// controller manager and scheduler, kwok and the Flux controllers, and the kubectl it offers.
var sandboxTools = []string{"envtest", "cluster", "kwok", "flux", "kubectl"}

// buildSandboxTools builds the sandbox's tools that are not in the tool cache yet (the first run
// on a machine takes minutes; later runs find them and go on at once). Against a cluster of
// $KUBECONFIG none is needed.
func buildSandboxTools() error {
	for _, tool := range sandboxTools {
		cmd := exec.Command(filepath.Join(testenv.Root(), "hack", "tool.sh"), tool) //nolint:gosec,noctx // fixed script of this repository and a fixed tool name
		cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build the sandbox tool %s (hack/tool.sh %s): %w", tool, tool, err)
		}
	}
	return nil
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
