package conversation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
	"github.com/kubeopera/kubeopera-operator/internal/routerconf"
)

// Registration is what the operator tells the Controller REST API, and where: the default
// router, the NATS hub (NATS only, and only with an external NATS address) and the names of the
// CAs to import. Its JSON form is hashed into resources.AnnotationRegistration (Hash): the field
// names are part of that record.
type Registration struct {
	BaseURL string         `json:"baseURL"`
	Router  iofog.Router   `json:"router"`
	Hub     *iofog.NatsHub `json:"hub,omitempty"`
	CAs     []string       `json:"cas"`
}

// NewRegistration is the registration of the router at routerHost with the Controller at
// baseURL, importing the CAs cas; AddHub adds the NATS hub.
func NewRegistration(spec *datasancev3.ControlPlaneSpec, baseURL, routerHost string, cas []string) Registration {
	return Registration{BaseURL: baseURL, Router: routerRegistration(spec, routerHost), CAs: cas}
}

// AddHub registers the NATS hub at host (docs/controlplane.md#hub-registration-and-ca-import).
func (g *Registration) AddHub(spec *datasancev3.ControlPlaneSpec, host string) {
	g.Hub = natsHub(spec, host)
}

// Hash identifies the registration in resources.AnnotationRegistration.
func (g Registration) Hash() string {
	b, err := json.Marshal(g)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// VerificationDue reports whether the ControlPlane's registration should be verified now
// (docs/controlplane.md#controller-restarts). It calls nothing.
func (s *Session) VerificationDue() bool {
	return s.mem.registered.due(s.cp, s.now, s.verifyInterval)
}

// ProcessSeen asks GET /status and reports whether the Controller process that answered was
// seen holding the registration (a process not seen before may have started on an empty
// database). It records no verification.
func (s *Session) ProcessSeen(ctx context.Context) (bool, error) {
	if err := s.open(ctx); err != nil {
		return false, err
	}
	return s.mem.registered.seen(s.cp, s.status), nil
}

// HoldsRegistration reports whether the Controller still holds reg: without a further call when
// the process that answers GET /status was seen holding it, else by reading it back (a login,
// GET /router, GET /nats/hub), once per Controller process. A Controller that holds it is
// remembered.
func (s *Session) HoldsRegistration(ctx context.Context, reg Registration) (bool, error) {
	if err := s.open(ctx); err != nil {
		return false, err
	}
	if s.mem.registered.knownProcess(s.cp, s.status, s.now) {
		return true, nil
	}
	held, err := s.readBack(ctx, reg)
	if err != nil {
		return false, err
	}
	if held {
		s.mem.registered.record(s.cp, s.status, s.now)
		return true, nil
	}
	ctrl.LoggerFrom(ctx).Info("The Controller lost the registration (a process restarted on an empty database); registering again",
		"uptimeSec", s.status.UptimeSec)
	return false, nil
}

// readBack asks the Controller whether it still holds reg: GET /router, and GET /nats/hub when
// a hub is registered, compared with what was registered (the JetStream sizes are not echoed).
// A 404 means it does not. The CAs are not read: they live in the same database, and a
// Controller that lost it lost the router too.
func (s *Session) readBack(ctx context.Context, reg Registration) (bool, error) {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return false, err
	}
	router, err := api.GetDefaultRouter(ctx)
	if errors.Is(err, iofog.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, s.registrationFailure(ctx, err)
	}
	if *router != reg.Router {
		return false, nil
	}
	if reg.Hub == nil {
		return true, nil
	}
	hub, err := api.GetNatsHub(ctx)
	if errors.Is(err, iofog.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, s.registrationFailure(ctx, err)
	}
	want := *reg.Hub
	want.JsStorageSize, want.JsMemoryStoreSize = "", ""
	return *hub == want, nil
}

// Register logs in and tells the Controller the router (PUT /router) and the NATS hub (PUT
// /nats/hub, NATS only). The CAs are the caller's step.
func (s *Session) Register(ctx context.Context, reg Registration) error {
	api, err := s.loggedInClient(ctx)
	if err != nil {
		return err
	}
	if err := api.PutDefaultRouter(ctx, reg.Router); err != nil {
		return s.registrationFailure(ctx, err)
	}
	if reg.Hub != nil {
		if err := api.UpsertNatsHub(ctx, *reg.Hub); err != nil {
			return s.registrationFailure(ctx, err)
		}
	}
	return nil
}

// RecordRegistration remembers that the Controller process that answered GET /status in this
// pass holds the registration (it was just registered with).
func (s *Session) RecordRegistration() {
	s.mem.registered.record(s.cp, s.status, s.now)
}

// routerRegistration is the PUT /router body (docs/controlplane.md#router-registration): the
// fixed listener ports on the LoadBalancer path; spec.ingresses.router ports on the ingress
// path, 0 meaning the default (docs/controlplane.md#router-ingress-ports-of-0).
func routerRegistration(spec *datasancev3.ControlPlaneSpec, host string) iofog.Router {
	r := iofog.Router{Host: host, MessagingPort: routerconf.AMQPSPort, InterRouterPort: routerconf.InterRouterPort, EdgeRouterPort: routerconf.EdgePort}
	if datasancev3.ServiceType(spec.Services.Router) == corev1.ServiceTypeLoadBalancer || spec.Ingresses.Router == nil {
		return r
	}
	in := spec.Ingresses.Router
	r.MessagingPort = portOr(in.MessagePort, routerconf.AMQPSPort)
	r.InterRouterPort = portOr(in.InteriorPort, routerconf.InterRouterPort)
	r.EdgeRouterPort = portOr(in.EdgePort, routerconf.EdgePort)
	return r
}

func portOr(p, def int32) int {
	if p == 0 {
		return int(def)
	}
	return int(p)
}

// natsHub is the PUT /nats/hub body for host: the ingresses.nats ports, 0 meaning the NATS
// defaults, on the LoadBalancer path as well (docs/controlplane.md#hub-registration-and-ca-import).
func natsHub(spec *datasancev3.ControlPlaneSpec, host string) *iofog.NatsHub {
	var ing datasancev3.NatsIngress
	if spec.Ingresses.Nats != nil {
		ing = *spec.Ingresses.Nats
	}
	port := func(p int32, def int) int {
		if p > 0 {
			return int(p)
		}
		return def
	}
	return &iofog.NatsHub{
		Host:        host,
		ServerPort:  port(ing.ServerPort, natsconf.ClientPort),
		ClusterPort: port(ing.ClusterPort, natsconf.ClusterPort),
		LeafPort:    port(ing.LeafPort, natsconf.LeafPort),
		MqttPort:    port(ing.MqttPort, natsconf.MQTTPort),
		HTTPPort:    port(ing.HTTPPort, natsconf.MonitorPort),
	}
}
