package controlplane

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// Images are the default operand images, used when a ControlPlane's spec.images leaves one empty.
// The manager fills them from RELATED_IMAGE_* variables (the OLM bundle's relatedImages). The
// type lives with the builders that use it (internal/resources).
type Images = resources.Images

// Default operand images (see resources.DefaultControllerImage for the release line).
const (
	DefaultControllerImage = resources.DefaultControllerImage
	DefaultRouterImage     = resources.DefaultRouterImage
	DefaultNatsImage       = resources.DefaultNatsImage
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
	// GET /status to notice a restarted process (and re-register what a lost database forgot):
	// a Controller that restarted is found within this long of answering again, for one
	// unauthenticated call per interval in steady state.
	DefaultControllerVerifyInterval = 30 * time.Second
	// DefaultReadyGracePeriod: how long a ready ControlPlane whose passes fail keeps ready True
	// (with the failure as reason) before it leaves ready for deploying
	// (docs/controlplane.md#failing-while-ready).
	DefaultReadyGracePeriod = 5 * time.Minute
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
	Images resources.Images
	// MaxConcurrentReconciles is the number of ControlPlanes reconciled at once (0: default).
	MaxConcurrentReconciles int
	// PassTimeout bounds one pass (0: default).
	PassTimeout time.Duration
	// ControllerVerifyInterval is how often a ready ControlPlane's Controller is checked for a
	// restarted process with GET /status (0: default).
	ControllerVerifyInterval time.Duration
	// ReadyGracePeriod is how long passes of a ready ControlPlane may fail before it leaves ready
	// (0: default).
	ReadyGracePeriod time.Duration
	// Clock is the reconciler's clock: certificate validity and renewal, verification intervals,
	// restart stamps. nil means the real clock; tests inject a fake one.
	Clock clock.PassiveClock
	// OpenShiftSCC says the cluster admits pods with OpenShift's SecurityContextConstraints
	// (ServesSCC): the Controller and NATS ServiceAccounts are then bound to SCC nonroot-v2.
	OpenShiftSCC bool
	// OnPass, when set, is called at the end of every pass with the ControlPlane's key (after
	// its status patch). Tests use it to know that no pass is in flight before they count what
	// happens over a window; production code has no use for it.
	OnPass func(types.NamespacedName)
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

func (o Options) readyGracePeriod() time.Duration {
	if o.ReadyGracePeriod > 0 {
		return o.ReadyGracePeriod
	}
	return DefaultReadyGracePeriod
}

// DefaultOptions returns the in-cluster defaults.
func DefaultOptions() Options {
	return Options{
		ControllerEndpointTemplate: DefaultControllerEndpointTemplate,
		Images: resources.Images{
			Controller: resources.DefaultControllerImage,
			Router:     resources.DefaultRouterImage,
			Nats:       resources.DefaultNatsImage,
		},
		MaxConcurrentReconciles:  DefaultMaxConcurrentReconciles,
		PassTimeout:              DefaultPassTimeout,
		ControllerVerifyInterval: DefaultControllerVerifyInterval,
		ReadyGracePeriod:         DefaultReadyGracePeriod,
		Clock:                    clock.RealClock{},
	}
}
