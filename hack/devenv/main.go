// Command devenv is what `make run` runs: the operator's manager, against the cluster of
// $KUBECONFIG when one answers, otherwise against an embedded local control plane (the envtest
// kube-apiserver and etcd built by `make envtest-assets`) with the CRDs and the samples installed.
//
// In local mode it writes a kubeconfig to .local/kubeconfig and prints how to use it with the
// kubectl built next to the API server. There is no kubelet, so no pod ever runs: the ControlPlane
// reconciler creates its objects and then waits for the Controller API (point
// --controller-endpoint-template at a real or port-forwarded Controller to go further).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

const (
	localDir       = ".local"
	demoNamespace  = "demo"
	reachTimeout   = 5 * time.Second
	kubeconfigName = "kubeconfig"
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
	local := fs.Bool("local", false, "Always start the embedded local control plane, even when $KUBECONFIG answers.")
	zapOpts := zap.Options{Development: true}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
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
		fmt.Printf("Running the operator against %s (Ctrl-C to stop).\n", source)
		return start(ctx, cfg, opts)
	}

	fmt.Printf("No reachable cluster (%s): starting an embedded local control plane.\n", source)
	env, cfg, err := startLocal()
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("Stopping the local control plane.")
		_ = env.Stop()
	}()
	return start(ctx, cfg, opts)
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

func startLocal() (*testenv.Env, *rest.Config, error) {
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return nil, nil, fmt.Errorf("start local control plane: %w", err)
	}
	kubeconfig, err := env.Kubeconfig("developer")
	if err != nil {
		_ = env.Stop()
		return nil, nil, err
	}
	if err := os.MkdirAll(localDir, 0o700); err != nil {
		_ = env.Stop()
		return nil, nil, fmt.Errorf("create %s: %w", localDir, err)
	}
	path, _ := filepath.Abs(filepath.Join(localDir, kubeconfigName))
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		_ = env.Stop()
		return nil, nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	if err := installSamples(env.Client); err != nil {
		_ = env.Stop()
		return nil, nil, err
	}
	fmt.Printf("\nLocal control plane is up; CRDs and samples are installed in namespace %q.\n", demoNamespace)
	fmt.Printf("Use it from another shell:\n\n  export KUBECONFIG=%s\n  %s get controlplanes,kubeoperaapps -A\n\n",
		path, filepath.Join(testenv.AssetsDir(), "kubectl"))
	return env, env.Config, nil
}

// installSamples creates the demo namespace, the Secret the ControlPlane sample references, and
// every sample in config/samples.
func installSamples(c client.Client) error {
	ctx := context.Background()
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "controller-bootstrap", Namespace: demoNamespace},
			StringData: map[string]string{"password": "local-dev-only"}, //nolint:gosec // G101: a throwaway password for the local sample.
		},
	}
	samples, err := filepath.Glob(filepath.Join("config", "samples", "*_*.yaml"))
	if err != nil {
		return fmt.Errorf("list samples: %w", err)
	}
	for _, file := range samples {
		data, err := os.ReadFile(file) //nolint:gosec // G304: files of this repository.
		if err != nil {
			return fmt.Errorf("read sample: %w", err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return fmt.Errorf("parse %s: %w", file, err)
		}
		u.SetNamespace(demoNamespace)
		objs = append(objs, u)
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

func start(ctx context.Context, cfg *rest.Config, opts controllers.Options) error {
	mgr, err := controllers.New(cfg, opts)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
