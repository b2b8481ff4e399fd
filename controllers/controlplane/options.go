package controlplane

import (
	"time"

	"k8s.io/utils/clock"
)

// Images are the default operand images, used when a ControlPlane's spec.images leaves one empty.
// The manager fills them from RELATED_IMAGE_* variables (the OLM bundle's relatedImages).
type Images struct {
	Controller string
	Router     string
	Nats       string
}

// Default operand images: the Datasance PoT 3.9.0 release line, as the upstream Helm chart ships
// it. The operator emits the Controller 3.8+ contract (AUTH_MODE, OIDC_*, TLS_PATH_*, embedded
// login at /api/v3/user/login); a 3.7 Controller knows only Keycloak (KC_*) and SSL_PATH_* and can
// never be logged in to. The NATS image has its own version line (upstream 3.9 ships nats 2.15.0).
// config/manager/manager.yaml sets the same values as RELATED_IMAGE_* (images_test.go checks it).
const (
	DefaultControllerImage = "ghcr.io/datasance/controller:3.9.0"
	DefaultRouterImage     = "ghcr.io/datasance/router:3.9.0"
	DefaultNatsImage       = "ghcr.io/datasance/nats:2.15.0"
)

// Defaults of the reconciler's pacing options.
const (
	// DefaultMaxConcurrentReconciles: ControlPlanes reconciled at once. A pass makes up to ~8
	// sequential Controller calls; with one worker, one black-holed Controller would stall all.
	DefaultMaxConcurrentReconciles = 4
	// DefaultPassTimeout bounds one pass (every Kubernetes and Controller call of it); the status
	// patch at its end has its own budget.
	DefaultPassTimeout = 2 * time.Minute
	// DefaultControllerVerifyInterval: how often a ready ControlPlane's Controller is asked for
	// GET /status to notice a restart (and re-register what a lost database forgot).
	DefaultControllerVerifyInterval = 5 * time.Minute
)

// DefaultControllerEndpointTemplate reaches the Controller through cluster DNS, as in-cluster
// operators do.
const DefaultControllerEndpointTemplate = "controller.{namespace}.svc.cluster.local:51121"

// Options configure the ControlPlane reconciler.
type Options struct {
	// ControllerEndpointTemplate is the host:port of a ControlPlane's Controller API, with
	// {namespace} and {name} replaced. Off-cluster runs (make run, tests) point it at a
	// port-forward or a test server; the scheme still follows spec.controller.https.
	ControllerEndpointTemplate string
	// ControllerCAFile is a PEM bundle of extra CAs trusted for the Controller API over HTTPS.
	ControllerCAFile string
	// Images are the default operand images.
	Images Images
	// MaxConcurrentReconciles is the number of ControlPlanes reconciled at once (0: default).
	MaxConcurrentReconciles int
	// PassTimeout bounds one pass (0: default).
	PassTimeout time.Duration
	// ControllerVerifyInterval is how often a ready ControlPlane's Controller is checked for a
	// restart with GET /status (0: default).
	ControllerVerifyInterval time.Duration
	// Clock is the reconciler's clock: certificate validity and renewal, verification intervals,
	// restart stamps. nil means the real clock; tests inject a fake one.
	Clock clock.PassiveClock
}

func (o Options) maxConcurrentReconciles() int {
	if o.MaxConcurrentReconciles > 0 {
		return o.MaxConcurrentReconciles
	}
	return DefaultMaxConcurrentReconciles
}

func (o Options) passTimeout() time.Duration {
	if o.PassTimeout > 0 {
		return o.PassTimeout
	}
	return DefaultPassTimeout
}

func (o Options) controllerVerifyInterval() time.Duration {
	if o.ControllerVerifyInterval > 0 {
		return o.ControllerVerifyInterval
	}
	return DefaultControllerVerifyInterval
}

// DefaultOptions returns the in-cluster defaults.
func DefaultOptions() Options {
	return Options{
		ControllerEndpointTemplate: DefaultControllerEndpointTemplate,
		Images: Images{
			Controller: DefaultControllerImage,
			Router:     DefaultRouterImage,
			Nats:       DefaultNatsImage,
		},
		MaxConcurrentReconciles:  DefaultMaxConcurrentReconciles,
		PassTimeout:              DefaultPassTimeout,
		ControllerVerifyInterval: DefaultControllerVerifyInterval,
		Clock:                    clock.RealClock{},
	}
}
