package controlplane_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// First install with LoadBalancer exposure; the load balancers get their addresses late. Every
// requeue delay is asserted as a value, and the Controller API calls with their bodies.
func TestFirstInstallLoadBalancer(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane())

	// First sight: deploying is written, nothing else happens.
	h.mustRequeue(controlplane.RequeueTransition)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonProgressing)
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Normal Deploying")))

	// No LoadBalancer has an address: both components wait 10 s; no Deployment, no API call.
	h.mustRequeue(controlplane.RequeueLoadBalancer)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonWaitingForLoadBalancer)
	g.Expect(h.exists(&corev1.Service{}, "router")).To(BeTrue())
	g.Expect(h.exists(&corev1.Service{}, "controller")).To(BeTrue())
	g.Expect(h.exists(&corev1.Secret{}, "controller-db-credentials")).To(BeTrue())
	g.Expect(h.exists(&corev1.Secret{}, "router-site-ca")).To(BeFalse(), "router certificates need the address")
	g.Expect(h.api.Calls()).To(BeEmpty())

	// The router gets its address: before it issues its certificates it asks the Controller for
	// its CAs (none yet: generated and imported), creates its Deployment and waits for it to
	// roll out (5 s); the Controller still waits for its address, the longer wait (10 s), which
	// the status reports, while the pass comes back for the sooner.
	h.setServiceAddress("router", routerLBIP)
	h.mustRequeue(controlplane.RequeueWorkload)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonWaitingForLoadBalancer)
	g.Expect(h.get().Status.Router.Ready).To(BeFalse())
	g.Expect(h.get().Status.Router.Reason).To(Equal(datasancev3.ReasonWorkloadUnavailable))
	g.Expect(h.get().Status.Router.Message).To(Equal("Router is not available: Deployment router is rolling out."))
	g.Expect(h.exists(&appsv1.Deployment{}, "router")).To(BeTrue())
	g.Expect(h.get().Status.Router.Address).To(Equal(routerLBIP))
	g.Expect(h.exists(&corev1.Secret{}, "router-site-server")).To(BeTrue())
	g.Expect(h.exists(&corev1.Secret{}, "controller")).To(BeFalse())
	g.Expect(h.get().Status.Controller.Reason).To(Equal(datasancev3.ReasonWaitingForLoadBalancer))
	g.Expect(h.api.Calls()).To(Equal([]string{
		"GET /api/v3/status",
		"POST /api/v3/user/login",
		"GET /api/v3/certificates/ca/router-site-ca",
		"POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/default-router-local-ca",
		"POST /api/v3/certificates/ca",
	}))
	reqs := h.api.Requests()
	g.Expect(reqs[1].Body).To(MatchJSON(`{"email":"admin","password":"fake-bootstrap-password"}`))
	g.Expect(reqs[2].Header.Get("Authorization")).To(HavePrefix("Bearer "))
	g.Expect(reqs[3].Body).To(MatchJSON(`{"name":"router-site-ca","type":"k8s-secret","secretName":"router-site-ca"}`))
	g.Expect(reqs[5].Body).To(MatchJSON(`{"name":"default-router-local-ca","type":"k8s-secret","secretName":"default-router-local-ca"}`))
	h.api.Reset()

	// The router's pods run, and the Controller gets its address: the router is done, the
	// Controller Deployment is created with the derived URLs, 5 s wait.
	h.finishRollouts()
	h.setServiceAddress("controller", h.controllerLB)
	h.mustRequeue(controlplane.RequeueDeploymentCreated)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonWaitingForDeployment)
	g.Expect(h.get().Status.Router.Ready).To(BeTrue())
	env := envOf(h.deployment("controller").Spec.Template.Spec.Containers[0])
	g.Expect(env).To(HaveKeyWithValue("CONTROLLER_PUBLIC_URL", "http://"+h.controllerLB+":51121"))
	g.Expect(env).To(HaveKeyWithValue("CONSOLE_URL", "http://"+h.controllerLB))
	g.Expect(h.api.Calls()).To(BeEmpty(), "the CAs were seen to match: nothing to ask")

	// The Controller Deployment is still rolling out: the Controller waits for its pods (5 s)
	// and its REST API is not called.
	h.mustRequeue(controlplane.RequeueWorkload)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonWorkloadUnavailable)
	g.Expect(h.trueCondition().Message).To(Equal("Controller is not available: Deployment controller is rolling out."))
	g.Expect(h.get().Status.Controller.Ready).To(BeFalse())
	g.Expect(h.api.Calls()).To(BeEmpty(), "nothing runs to answer")

	// The Controller's pods run and it answers: status, login, router, the CAs checked, external
	// check → ready.
	h.finishRollouts()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(Equal([]string{
		"GET /api/v3/status",
		"POST /api/v3/user/login",
		"PUT /api/v3/router",
		"GET /api/v3/certificates/ca/router-site-ca",
		"GET /api/v3/certificates/ca/default-router-local-ca",
		"GET /api/v3/status",
	}))
	reqs = h.api.Requests()
	g.Expect(reqs[2].Body).To(MatchJSON(`{"host":"` + routerLBIP + `","messagingPort":5671,"edgeRouterPort":45671,"interRouterPort":55671}`))
	g.Expect(reqs[2].Header.Get("Authorization")).To(HavePrefix("Bearer "))
	g.Expect(h.requestedBaseURLs()).To(ContainElement("http://" + h.controllerLB + ":51121"))
	g.Expect(h.api.ImportedCAs()).To(ConsistOf("router-site-ca", "default-router-local-ca"))

	cp := h.get()
	g.Expect(cp.Status.ObservedGeneration).To(Equal(cp.Generation))
	g.Expect(cp.Status.Controller.PublicURL).To(Equal("http://" + h.controllerLB + ":51121"))
	g.Expect(cp.Status.Controller.Ready).To(BeTrue())
	g.Expect(cp.Annotations).To(HaveKey(controlplane.AnnotationRegistration))
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Normal Reconciled")))
	for _, c := range cp.Status.Conditions {
		if c.Type != datasancev3.ConditionReady {
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(datasancev3.ReasonTransitioned))
		}
	}
}

// A pass over an unchanged ready ControlPlane writes nothing and calls nothing.
func TestReadyPassWritesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.bringUp(h.controlPlane())
	g := h.g
	before := h.snapshot()
	h.api.Reset()
	h.writes.Store(0)

	h.mustBeReady()
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeZero(), "no create/update/patch/apply/delete")
	g.Expect(h.api.Calls()).To(BeEmpty(), "no Controller API call while ready")
	g.Expect(h.snapshot()).To(Equal(before))
}

// ClusterIP + Ingress exposure: https URL from the Ingress TLS Secret, TRUST_PROXY, the router on
// an ingress address with default ports, and readiness once the Ingress has an address.
func TestIngressExposure(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane(testfixture.WithControllerIngress(datasancev3.ControllerIngress{
		Host: "controller.example.com", SecretName: "controller-tls", IngressClassName: "nginx",
		Annotations: map[string]string{"cert-manager.io/cluster-issuer": "letsencrypt"},
	}), func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Router = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP}
		cp.Spec.Ingresses.Router = &datasancev3.RouterIngress{Address: "router.example.com", MessagePort: 443}
	}))
	h.mustRequeue(controlplane.RequeueTransition)
	// No load balancer to wait for: both Deployments are created at once; the router waits for
	// its rollout and the Controller for its Deployment, 5 s each.
	h.mustRequeue(controlplane.RequeueDeploymentCreated)
	g.Expect(h.exists(&appsv1.Deployment{}, "router")).To(BeTrue())

	ing := &networkingv1.Ingress{}
	g.Expect(env.Client.Get(h.ctx, h.key("controller"), ing)).To(Succeed())
	g.Expect(ing.Annotations).To(HaveKeyWithValue("cert-manager.io/cluster-issuer", "letsencrypt"))
	g.Expect(ing.Spec.IngressClassName).To(HaveValue(Equal("nginx")))
	g.Expect(ing.Spec.TLS).To(Equal([]networkingv1.IngressTLS{{Hosts: []string{"controller.example.com"}, SecretName: "controller-tls"}}))
	g.Expect(ing.Spec.Rules).To(HaveLen(1))
	g.Expect(ing.Spec.Rules[0].Host).To(Equal("controller.example.com"))
	paths := ing.Spec.Rules[0].HTTP.Paths
	g.Expect(paths).To(HaveLen(3))
	g.Expect(paths[0].Path).To(Equal("/"))
	g.Expect(paths[0].Backend.Service.Port.Name).To(Equal("console"))
	g.Expect(paths[1].Path).To(Equal("/api/v3"))
	g.Expect(paths[1].Backend.Service.Port.Name).To(Equal("controller-api"))
	g.Expect(*paths[1].PathType).To(Equal(networkingv1.PathTypePrefix))
	// Embedded auth: the Controller's own OIDC issuer is on the API port.
	g.Expect(paths[2].Path).To(Equal("/oidc"))
	g.Expect(paths[2].Backend.Service.Port.Name).To(Equal("controller-api"))

	svc := &corev1.Service{}
	g.Expect(env.Client.Get(h.ctx, h.key("controller"), svc)).To(Succeed())
	g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(svc.Spec.ExternalTrafficPolicy).To(BeEmpty())

	env := envOf(h.deployment("controller").Spec.Template.Spec.Containers[0])
	g.Expect(env).To(HaveKeyWithValue("CONTROLLER_PUBLIC_URL", "https://controller.example.com"))
	g.Expect(env).To(HaveKeyWithValue("CONSOLE_URL", "https://controller.example.com"))
	g.Expect(env).To(HaveKeyWithValue("TRUST_PROXY", "true"))

	// Both rollouts finish. The Ingress has no load-balancer address yet: wait (it is watched),
	// after registering.
	h.finishRollouts()
	h.mustRequeue(controlplane.RequeueLoadBalancer)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonIngressNotReady)
	router, ok := h.api.Router()
	g.Expect(ok).To(BeTrue())
	g.Expect(*router).To(Equal(iofogRouter("router.example.com", 443, 45671, 55671)))
	g.Expect(h.api.RequestsTo("PUT", "/api/v3/router")[0].Body).To(MatchJSON(
		`{"host":"router.example.com","messagingPort":443,"edgeRouterPort":45671,"interRouterPort":55671}`))

	h.setIngressAddress(ingressLBIP)
	h.mustBeReady()
	g.Expect(h.requestedBaseURLs()).NotTo(ContainElement(ContainSubstring(ingressLBIP)), "no status call through the Ingress")
}

// An explicit publicUrl is used as is and never waits for the controller LoadBalancer to build
// the Deployment; the external check still needs the address.
func TestExplicitPublicURL(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane(testfixture.WithPublicURL("https://iofog.example.com")))
	h.mustRequeue(controlplane.RequeueTransition)
	// The router waits for its address (10 s), but the Controller Deployment is created at once
	// and polled sooner (5 s): the pass comes back for the sooner.
	h.mustRequeue(controlplane.RequeueDeploymentCreated)
	g.Expect(h.get().Status.Controller.Reason).To(Equal(datasancev3.ReasonWaitingForDeployment))
	h.setServiceAddress("router", routerLBIP)
	env := envOf(h.deployment("controller").Spec.Template.Spec.Containers[0])
	g.Expect(env).To(HaveKeyWithValue("CONTROLLER_PUBLIC_URL", "https://iofog.example.com"))
	g.Expect(env).To(HaveKeyWithValue("CONSOLE_URL", "https://iofog.example.com"))
	g.Expect(env).NotTo(HaveKey("TRUST_PROXY"))

	// The Controller's pods run: it registers and waits for its address for the external check
	// (10 s, the status's reason), longer than the router waits for the rollout of the
	// Deployment it just created (5 s, when the pass comes back).
	h.finishRollouts()
	h.mustRequeue(controlplane.RequeueWorkload)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonWaitingForLoadBalancer)
	g.Expect(h.get().Status.Router.Reason).To(Equal(datasancev3.ReasonWorkloadUnavailable))
	g.Expect(h.api.RequestsTo("PUT", "/api/v3/router")).NotTo(BeEmpty())
	// The router's pods run and the controller LoadBalancer gets its address: ready.
	h.finishRollouts()
	h.setServiceAddress("controller", h.controllerLB)
	h.mustBeReady()
	g.Expect(h.get().Status.Controller.PublicURL).To(Equal("https://iofog.example.com"))
}

// snapshot maps every object of the namespace (and the ControlPlane) to its resourceVersion.
func (h *harness) snapshot() map[string]string {
	h.t.Helper()
	out := map[string]string{"ControlPlane": h.get().ResourceVersion}
	lists := []client.ObjectList{
		&corev1.SecretList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{}, &corev1.ServiceAccountList{},
		&corev1.PersistentVolumeClaimList{}, &networkingv1.IngressList{}, &appsv1.DeploymentList{},
		&rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
	}
	for _, list := range lists {
		h.g.Expect(env.Client.List(h.ctx, list, client.InNamespace(h.ns))).To(Succeed())
		items, err := apimeta.ExtractList(list)
		h.g.Expect(err).NotTo(HaveOccurred())
		for _, item := range items {
			o, err := apimeta.Accessor(item)
			h.g.Expect(err).NotTo(HaveOccurred())
			out[fmt.Sprintf("%T/%s", item, o.GetName())] = o.GetResourceVersion()
		}
	}
	return out
}

func iofogRouter(host string, messaging, edge, interRouter int) iofog.Router {
	return iofog.Router{Host: host, MessagingPort: messaging, EdgeRouterPort: edge, InterRouterPort: interRouter}
}
