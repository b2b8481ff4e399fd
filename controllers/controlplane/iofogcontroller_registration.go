package controlplane

import (
	"context"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/conversation"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// registerWithIoFogController runs docs/controlplane.md#controller-reconcile-steps steps 4-6 against the Controller REST API: GET /status,
// login, PUT /router, PUT /nats/hub (NATS only), the CA imports, and the external reachability
// check. On a ready ControlPlane whose registration is unchanged it calls nothing, except one
// GET /status per Options.ControllerVerifyInterval (docs/controlplane.md#controller-restarts): a
// Controller process not seen before (a restarted or new pod; any pod may answer) is asked
// whether it still holds the registration (conv.HoldsRegistration reads it back), and only a
// Controller that lost it is registered again.
func (r *Reconciler) registerWithIoFogController(ctx context.Context, s *scope, conv controllerConversation, lbAddress string) error {
	reg, err := r.desiredRegistration(ctx, s)
	if err != nil {
		return err
	}
	hash := reg.Hash()
	if s.steady && s.cp.Annotations[resources.AnnotationRegistration] == hash {
		// A CA Secret that changed was compared with the Controller's copy by its component.
		if !conv.VerificationDue() {
			return nil
		}
		held, err := conv.HoldsRegistration(ctx, reg)
		if err != nil || held {
			return err
		}
	}

	if err := conv.LogIn(ctx); err != nil {
		return err
	}
	if err := r.register(ctx, s, conv, reg); err != nil {
		// A registration that stopped part-way leaves the Controller holding some of reg: the
		// annotation no longer claims all of it, so the next pass registers in full and meets
		// the same failure, instead of a read-back that compares the router and hub only.
		delete(s.cp.Annotations, resources.AnnotationRegistration)
		return err
	}
	if err := r.checkExternalReachability(ctx, s, conv, lbAddress); err != nil {
		return err
	}
	if s.cp.Annotations == nil {
		s.cp.Annotations = map[string]string{}
	}
	s.cp.Annotations[resources.AnnotationRegistration] = hash
	conv.RecordRegistration()
	return nil
}

// register tells the Controller reg: PUT /router, PUT /nats/hub (NATS only) and the CA step
// (importCAs).
func (r *Reconciler) register(ctx context.Context, s *scope, conv controllerConversation, reg conversation.Registration) error {
	if err := conv.Register(ctx, reg); err != nil {
		return err
	}
	return r.importCAs(ctx, s, conv, reg.CAs)
}

// desiredRegistration computes what to register: the default router (docs/controlplane.md#router-registration), the NATS hub
// (NATS only, docs/controlplane.md#hub-registration-and-ca-import) and the CAs to import. It requeues while the router LoadBalancer has no
// address, and fails when a non-LoadBalancer router has no ingress address.
func (r *Reconciler) desiredRegistration(ctx context.Context, s *scope) (conversation.Registration, error) {
	host, err := r.routerAddress(ctx, s)
	if err != nil {
		return conversation.Registration{}, err
	}
	reg := conversation.NewRegistration(s.spec, internalControllerURL(r.Options.ControllerEndpointTemplate, s.cp), host,
		append([]string(nil), resources.RouterCASecretNames...))
	if s.natsEnabled() {
		address, err := r.natsHubAddress(ctx, s)
		if err != nil {
			return conversation.Registration{}, err
		}
		if address != "" {
			reg.AddHub(s.spec, address)
		}
		reg.CAs = append(reg.CAs, resources.NatsCASecretNames()...)
	}
	return reg, nil
}

// checkExternalReachability is docs/controlplane.md#controller-reconcile-steps step 6: a LoadBalancer Controller must answer GET /status
// on its LoadBalancer address; an Ingress-exposed one needs an Ingress with load-balancer status.
// Other exposures are not checked. Over https the check dials the LoadBalancer address and
// verifies the certificate, with the ControlPlane's trust, against the name external clients use:
// the host of the public URL (spec.controller.publicUrl, or the LoadBalancer address when the URL
// is derived from it). A certificate that does not cover that name is ControllerCertificateInvalid.
func (r *Reconciler) checkExternalReachability(ctx context.Context, s *scope, conv controllerConversation, lbAddress string) error {
	switch {
	case datasancev3.ServiceType(s.spec.Services.Controller) == corev1.ServiceTypeLoadBalancer:
		if lbAddress == "" {
			return outcome.Wait(datasancev3.ReasonWaitingForLoadBalancer, requeueLoadBalancer,
				"Waiting for a LoadBalancer address of Service controller.")
		}
		ep := conversation.Endpoint{BaseURL: resources.ControllerScheme(s.spec) + "://" + net.JoinHostPort(lbAddress, strconv.Itoa(resources.ControllerAPIPort))}
		if name := conversation.HostOfURL(s.cp.Status.Controller.PublicURL); s.spec.ControllerHTTPS() && name != "" && name != lbAddress {
			ep.ServerNames = []string{name}
		}
		if s.spec.ControllerHTTPS() {
			cas, err := r.controllerTrust(ctx, s)
			if err != nil {
				return err
			}
			ep.CAs = cas
		}
		return conv.Reachable(ctx, ep)
	case s.spec.ControllerIngressMode():
		ing := &networkingv1.Ingress{}
		found, err := r.getExisting(ctx, s, resources.ControllerName, ing)
		if err != nil {
			return err
		}
		if !found || len(ing.Status.LoadBalancer.Ingress) == 0 {
			return outcome.Wait(datasancev3.ReasonIngressNotReady, requeueLoadBalancer,
				"No LoadBalancer ingress found for Ingress resource controller yet.")
		}
	}
	return nil
}
