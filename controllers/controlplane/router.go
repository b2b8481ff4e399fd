package controlplane

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/routerconf"
)

// errMissingRouterAddress is upstream's text for a router that is neither a LoadBalancer nor has
// spec.ingresses.router.address (the API server's CEL rule V3 normally prevents it).
var errMissingRouterAddress = errors.New("reconcile Router failed: missing Proxy.Router data for non LoadBalancer Router service")

// reconcileRouter is the Router component (docs/controlplane.md#router-component): ServiceAccount → Role → RoleBinding →
// Service → address → TLS Secrets → ConfigMap → Deployment, then the handover from the
// Datasance operator's router pods while any is left (takeover.go), and done once the Deployment
// is available (workloads.go).
func (r *Reconciler) reconcileRouter(ctx context.Context, s *scope, conv controllerConversation) error {
	m := resources.MetaFor(s.cp, resources.ComponentRouter, resources.RouterName)
	if err := r.applyWorkloadIdentity(ctx, s, m, resources.RouterRules); err != nil {
		return err
	}
	svc := &corev1.Service{}
	if _, err := applyIfChanged(ctx, r, s, s.serviceFor(resources.ComponentRouter, resources.RouterService(s.cp)), svc, corev1ac.ExtractService); err != nil {
		return err
	}

	address, err := s.observeRouterAddress(svc)
	s.cp.Status.Router.Address = address
	if err != nil {
		return err
	}

	secrets, err := r.ensureCertificates(ctx, s, conv, resources.ComponentRouter, resources.RouterCertificates(s.namespace(), address))
	if err != nil {
		return err
	}
	if err := r.applyRouterConfig(ctx, s); err != nil {
		return err
	}
	tlsHash := resources.HashData(map[string]map[string][]byte{
		resources.RouterSiteServerSecretName:  secrets[resources.RouterSiteServerSecretName],
		resources.RouterLocalServerSecretName: secrets[resources.RouterLocalServerSecretName],
	})
	desired := resources.RouterDeployment(s.cp, s.images.Router, tlsHash)
	if s.handover(resources.ComponentRouter) != nil {
		resources.MarkDeploymentTakingOver(desired)
	}
	live := &appsv1.Deployment{}
	changed, err := applyIfChanged(ctx, r, s, desired, live, appsv1ac.ExtractDeployment)
	if err != nil {
		return err
	}
	err = r.handOverDeployment(ctx, s, resources.ComponentRouter, resources.RouterName, live, changed)
	if err != nil {
		return err
	}
	return r.awaitDeployment(ctx, s, resources.ComponentRouter, resources.RouterName, live, changed)
}

// routerAddress is the router's external address (docs/controlplane.md#router-service-and-address), from the defaulted Service type:
// the LoadBalancer address of Service router (requeue while there is none), otherwise
// spec.ingresses.router.address.
func routerAddress(spec *datasancev3.ControlPlaneSpec, svc *corev1.Service) (string, error) {
	if datasancev3.ServiceType(spec.Services.Router) == corev1.ServiceTypeLoadBalancer {
		if addr := resources.LoadBalancerAddress(svc.Status.LoadBalancer.Ingress); addr != "" {
			return addr, nil
		}
		return "", outcome.Wait(datasancev3.ReasonWaitingForLoadBalancer, requeueLoadBalancer,
			"Waiting for a LoadBalancer address of Service router.")
	}
	if spec.Ingresses.Router != nil && spec.Ingresses.Router.Address != "" {
		return spec.Ingresses.Router.Address, nil
	}
	return "", outcome.Stop(datasancev3.ReasonMissingRouterAddress, errMissingRouterAddress)
}

// applyRouterConfig writes skrouterd.json (docs/controlplane.md#router-configuration): the rendered template on creation,
// otherwise the merge of the existing document with it, so entries the Controller or an admin
// added are kept. Nothing is written when the merge keeps the existing document and the labels
// and owner are in place. An unreadable existing document is reported, not overwritten.
func (r *Reconciler) applyRouterConfig(ctx context.Context, s *scope) error {
	desired, err := routerconf.Render(s.namespace())
	if err != nil {
		return fmt.Errorf("render skrouterd.json: %w", err)
	}
	live := &corev1.ConfigMap{}
	found, err := r.getExisting(ctx, s, routerconf.ConfigMapName, live)
	if err != nil {
		return err
	}
	config := desired
	if found {
		existing := []byte(live.Data[routerconf.ConfigKey])
		merged, changed, err := routerconf.Merge(existing, desired)
		switch {
		case errors.Is(err, routerconf.ErrInvalidExisting):
			return outcome.Stop(datasancev3.ReasonInvalidConfiguration, fmt.Errorf(
				"ConfigMap %s holds an invalid %s: fix or delete it", routerconf.ConfigMapName, routerconf.ConfigKey))
		case err != nil:
			return fmt.Errorf("merge skrouterd.json: %w", err)
		case !changed && labels.SelectorFromSet(s.labels(resources.ComponentRouter)).Matches(labels.Set(live.Labels)) && isControlledBy(live, s.cp.UID):
			return nil
		}
		config = merged
	}
	_, err = applyIfChanged(ctx, r, s, resources.RouterConfigMap(s.cp, config), &corev1.ConfigMap{}, corev1ac.ExtractConfigMap)
	return err
}

// applyWorkloadIdentity makes the component's ServiceAccount (applied: it carries the image pull
// Secret) and Role, and creates its RoleBinding when absent. The Role is applied, not only
// created, so that an upgraded operator narrows a Role an earlier version made with broader
// rules and an edited Role is restored (docs/controlplane.md#operand-rbac).
func (r *Reconciler) applyWorkloadIdentity(ctx context.Context, s *scope, m resources.ObjectMeta, rules []rbacv1.PolicyRule) error {
	if _, err := applyIfChanged(ctx, r, s, resources.ServiceAccount(m, s.spec.Images.PullSecret), &corev1.ServiceAccount{}, corev1ac.ExtractServiceAccount); err != nil {
		return err
	}
	if _, err := applyIfChanged(ctx, r, s, resources.Role(m, rules...), &rbacv1.Role{}, rbacv1ac.ExtractRole); err != nil {
		return err
	}
	_, err := createIfAbsent(ctx, r, s, resources.RoleBinding(m), &rbacv1.RoleBinding{})
	return err
}
