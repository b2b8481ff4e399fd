package controlplane

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
)

// scope is the state of one reconcile pass over one ControlPlane. Components receive it by
// pointer; the Reconciler itself holds only dependencies. It is data only: no reconciler, no
// session, no callbacks (test/architecture TestScopeIsData). Functions that use the clients are
// methods of *Reconciler taking the scope, and those that talk to the Controller take the pass's
// conversation as well (docs/architecture.md#the-controller-conversation).
type scope struct {
	// cp is the ControlPlane being reconciled; its status is patched at the end of the pass.
	cp *datasancev3.ControlPlane
	// spec is &cp.Spec, for brevity.
	spec *datasancev3.ControlPlaneSpec
	// now is the pass's clock reading (certificate validity).
	now time.Time
	// steady is true when the pass runs over a ready ControlPlane of the current generation: the
	// components repair drift of the owned objects, but the Controller REST API is called only
	// when what it was told (resources.AnnotationRegistration) is out of date.
	steady bool
	// images are the operand images in force (spec.images over the operator defaults).
	images resources.Images
	// renewAt is the earliest renewal time of the leaf certificates the pass kept (zero: none);
	// a ready pass requeues for it (certificates.go).
	renewAt time.Time
	// announced holds the messages of failures whose Warning Event a component emitted itself
	// (or, unchanged since the last pass, already had), so the state change does not repeat it.
	announced map[string]bool
	// restartController is set when the pass replaced a CA the Controller's processes keep in
	// memory (ca_sync.go, replaceControllerCA): the Controller Deployment rolls.
	restartController bool
	// creds are the pass's resolved credential references (credentials.go).
	creds resolvedCredentials
	// observed holds what the pass learned once and several components use.
	observed observations
	// handovers holds, per component, what the Datasance operator's workload left running
	// (takeover.go); nil when there is nothing to take over.
	handovers map[string]*handover
}

// observations are the facts of one pass that more than one component needs, observed once:
// the router address (router component, Controller registration) and the external NATS
// address (NATS component, hub registration). Nil: not observed yet in this pass.
type observations struct {
	router *routerObservation
	nats   *natsObservation
}

type routerObservation struct {
	address string
	err     error
}

type natsObservation struct {
	address string
	waiting bool
	err     error
}

// observeRouterAddress computes the router address from the router Service (routerAddress)
// and keeps it for the rest of the pass.
func (s *scope) observeRouterAddress(svc *corev1.Service) (string, error) {
	address, err := routerAddress(s.spec, svc)
	s.observed.router = &routerObservation{address: address, err: err}
	return address, err
}

// routerAddress is the router address of this pass: as the router component observed it, or,
// when that component ended before, from the router Service read now.
func (r *Reconciler) routerAddress(ctx context.Context, s *scope) (string, error) {
	if o := s.observed.router; o != nil {
		return o.address, o.err
	}
	svc := &corev1.Service{}
	if _, err := r.getExisting(ctx, s, resources.RouterName, svc); err != nil {
		return "", err
	}
	return s.observeRouterAddress(svc)
}

// newScope builds the scope of one pass.
func newScope(r *Reconciler, cp *datasancev3.ControlPlane, steady bool) *scope {
	return &scope{
		cp:     cp,
		spec:   &cp.Spec,
		now:    r.now(),
		steady: steady,
		images: imagesFor(&cp.Spec, r.Options.Images),
	}
}

// namespace is the ControlPlane's namespace, where every operand object lives.
func (s *scope) namespace() string { return s.cp.Namespace }

// natsEnabled reports whether NATS is deployed (spec.nats.enabled, default true).
func (s *scope) natsEnabled() bool { return s.spec.NatsEnabled() }

// labels are the standard labels of an object of component.
func (s *scope) labels(component string) map[string]string {
	return resources.StandardLabels(s.cp.Name, component)
}

// imagesFor applies spec.images over the operator's default images.
func imagesFor(spec *datasancev3.ControlPlaneSpec, defaults resources.Images) resources.Images {
	img := defaults
	if spec.Images.Controller != "" {
		img.Controller = spec.Images.Controller
	}
	if spec.Images.Router != "" {
		img.Router = spec.Images.Router
	}
	if spec.Images.Nats != "" {
		img.Nats = spec.Images.Nats
	}
	return img
}
