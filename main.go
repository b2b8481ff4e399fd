// Command kubeopera-operator runs the ControlPlane (datasance.com/v3) and KubeOperaApp
// (kubeopera.io/v1alpha1) reconcilers in one controller-runtime manager.
package main

import (
	"flag"
	"fmt"
	"os"

	"go.uber.org/zap/zapcore"
	// Mozilla's root CAs, used only when the system has none: the image of `make image` holds no
	// CA file, and the operator verifies TLS to Git hosts and Controllers (docs/operability.md).
	_ "golang.org/x/crypto/x509roots/fallback"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubeopera/kubeopera-operator/controllers"
)

// version is the operator's version, set at build time (-ldflags "-X main.version=0.2.0" in
// `make image`, `make release` and the Dockerfile).
var version = "dev"

func main() {
	os.Exit(run())
}

func run() int {
	controllers.ApplyGCDefaults(os.Getenv)
	opts := controllers.DefaultOptions()
	opts.ControlPlane.ControllerEndpointTemplate = envOr("CONTROLLER_ENDPOINT_TEMPLATE", opts.ControlPlane.ControllerEndpointTemplate)

	fs := flag.NewFlagSet(controllers.Name, flag.ContinueOnError)
	controllers.BindFlags(fs, &opts)
	zapOpts := zap.Options{}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		return 2
	}

	// ENVIRONMENT=development: human-readable debug logs; otherwise JSON at info. Explicit zap
	// flags still win because they were parsed into zapOpts.
	if os.Getenv("ENVIRONMENT") == "development" {
		zapOpts.Development = true
		if zapOpts.Level == nil {
			zapOpts.Level = zapcore.DebugLevel
		}
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	namespaces, err := controllers.ParseWatchNamespaces(os.Getenv("WATCH_NAMESPACE"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "invalid WATCH_NAMESPACE: %v\n", err)
		return 2
	}
	opts.WatchNamespaces = namespaces
	opts.ControlPlane.Images = controllers.ImagesFromEnv(opts.ControlPlane.Images)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "Unable to load a Kubernetes client configuration")
		return 1
	}
	mgr, err := controllers.New(cfg, opts)
	if err != nil {
		log.Error(err, "Unable to create the manager")
		return 1
	}
	log.Info("Starting manager", "version", version, "namespaces", namespaces, "controlPlaneReconciler", opts.EnableControlPlane, "appReconciler", opts.EnableApps)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Manager stopped with an error")
		return 1
	}
	return 0
}

func envOr(key, fallback string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return fallback
}
