package controlplane_test

import (
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The operand Roles grant Secrets by name only (docs/controlplane.md, "Operand RBAC"), checked
// by the real API server's RBAC authorizer with SubjectAccessReviews: the Controller's
// ServiceAccount may get the CA Secrets the operator imports into it, the router's its own TLS
// Secrets; neither may get another Secret of the namespace (the operator's credential Secrets,
// a user's Secret) nor list or watch Secrets. An edited Role is restored at the next pass.
func TestOperandRolesReadOnlyTheirSecrets(t *testing.T) {
	h := newHarness(t)
	g := h.g
	h.createSecret("users-own", map[string]string{"k": "v"})
	h.bringUp(h.controlPlane())

	can := func(sa, verb, name string) bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + h.ns + ":" + sa,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + h.ns, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: h.ns, Verb: verb, Resource: "secrets", Name: name,
			},
		}}
		g.Expect(env.Client.Create(h.ctx, sar)).To(Succeed())
		return sar.Status.Allowed
	}
	for _, name := range []string{"router-site-ca", "default-router-local-ca"} {
		g.Expect(can("controller", "get", name)).To(BeTrue(), "controller gets CA Secret %s", name)
	}
	for _, name := range []string{"router-site-ca", "default-router-local-ca", "router-site-server", "router-local-server"} {
		g.Expect(can("router", "get", name)).To(BeTrue(), "router gets its TLS Secret %s", name)
	}
	for _, sa := range []string{"controller", "router"} {
		for _, name := range []string{"users-own", "controller-db-credentials", "controller-auth-credentials", "controller-rollout-key"} {
			g.Expect(can(sa, "get", name)).To(BeFalse(), "%s must not get Secret %s", sa, name)
		}
		g.Expect(can(sa, "list", "")).To(BeFalse(), "%s must not list Secrets", sa)
		g.Expect(can(sa, "watch", "")).To(BeFalse(), "%s must not watch Secrets", sa)
	}
	g.Expect(can("controller", "get", "router-site-server")).To(BeFalse(), "the Controller imports CAs, not the router's server key")

	// A widened Role is narrowed again by the next pass.
	role := &rbacv1.Role{}
	g.Expect(h.exists(role, "controller")).To(BeTrue())
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}})
	g.Expect(env.Client.Update(h.ctx, role)).To(Succeed())
	g.Expect(can("controller", "get", "users-own")).To(BeTrue(), "the widened Role is in force")
	h.mustBeReady()
	g.Expect(can("controller", "get", "users-own")).To(BeFalse(), "the pass restored the Role")
}
