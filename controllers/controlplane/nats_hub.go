package controlplane

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

// natsExternalAddress is the external NATS address (docs/controlplane.md#external-nats-address): the load-balancer address of
// Service nats when its (defaulted) type is LoadBalancer — waiting reports that it has none
// yet — else ingresses.nats.address, else "". It is used for the server certificates' SANs,
// leafnodes.advertise and the hub registration. It is observed once per pass and kept in the
// scope, so the NATS component and the hub registration use the same address.
func (r *Reconciler) natsExternalAddress(ctx context.Context, s *scope) (address string, waiting bool, err error) {
	if o := s.observed.nats; o != nil {
		return o.address, o.waiting, o.err
	}
	address, waiting, err = r.observeNatsExternalAddress(ctx, s)
	s.observed.nats = &natsObservation{address: address, waiting: waiting, err: err}
	return address, waiting, err
}

func (r *Reconciler) observeNatsExternalAddress(ctx context.Context, s *scope) (address string, waiting bool, err error) {
	if datasancev3.ServiceType(s.spec.Services.Nats) == corev1.ServiceTypeLoadBalancer {
		var svc corev1.Service
		if found, err := r.getExisting(ctx, s, resources.NatsServiceName, &svc); err != nil || !found {
			return "", err == nil, err
		}
		address := resources.LoadBalancerAddress(svc.Status.LoadBalancer.Ingress)
		return address, address == "", nil
	}
	if ing := s.spec.Ingresses.Nats; ing != nil {
		return ing.Address, false, nil
	}
	return "", false, nil
}

// natsHubRegistration returns the NATS hub to register with the Controller (docs/controlplane.md#hub-registration-and-ca-import), or nil
// to skip the registration when there is no external NATS address (docs/controlplane.md#hub-registration-without-an-address; while a LoadBalancer
// address is pending, the NATS component requeues, and a later pass registers). The Controller
// component calls it only when NATS is enabled.
func (r *Reconciler) natsHubRegistration(ctx context.Context, s *scope) (*iofog.NatsHub, error) {
	address, _, err := r.natsExternalAddress(ctx, s)
	if err != nil || address == "" {
		return nil, err
	}
	return natsHub(s.spec, address), nil
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
