package controlplane

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
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

// natsHubAddress is the address of the NATS hub to register with the Controller
// (docs/controlplane.md#hub-registration-and-ca-import), or "" to skip the registration when there
// is no external NATS address (docs/controlplane.md#hub-registration-without-an-address; while a
// LoadBalancer address is pending, the NATS component requeues, and a later pass registers). The
// Controller component calls it only when NATS is enabled.
func (r *Reconciler) natsHubAddress(ctx context.Context, s *scope) (string, error) {
	address, _, err := r.natsExternalAddress(ctx, s)
	if err != nil {
		return "", err
	}
	return address, nil
}
