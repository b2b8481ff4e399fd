package controlplane_test

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The operand Roles grant Secrets by name only (docs/controlplane.md, "Operand RBAC"), checked
// by the real API server's RBAC authorizer with SubjectAccessReviews: the Controller's
// ServiceAccount may get the CA Secrets the operator imports into it, the router's its own TLS
// Secrets; neither may get another Secret of the namespace (the operator's credential Secrets,
// a user's Secret) nor list or watch Secrets. An edited Role is restored at the next pass.
func TestOperandRolesReadOnlyTheirSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.createSecret("users-own", map[string]string{"k": "v"})
	h.bringUp(h.controlPlane())

	can := func(sa, verb, name string) bool { return h.serviceAccountCan(sa, verb, "secrets", name) }
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

	// A widened Role is narrowed again by the next pass. (Whether the widened Role was ever in
	// force is not asserted: the operator watches its Roles and may restore it before the
	// authorizer is asked; a CI run saw that.)
	role := &rbacv1.Role{}
	g.Expect(h.exists(role, "controller")).To(BeTrue())
	narrow := slices.Clone(role.Rules)
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list"}})
	g.Expect(env.Client.Update(h.ctx, role)).To(Succeed())
	h.mustBeReady()
	g.Eventually(func() []rbacv1.PolicyRule {
		g.Expect(h.exists(role, "controller")).To(BeTrue())
		return role.Rules
	}).Should(Equal(narrow), "the pass restored the Role")
	g.Eventually(func() bool { return can("controller", "get", "users-own") }).Should(BeFalse(), "the restored Role is in force")
}

// serviceAccountCan asks the real API server's authorizer (a SubjectAccessReview) whether
// ServiceAccount sa of the harness namespace may verb the core resource named name ("" for
// list and watch).
func (h *harness) serviceAccountCan(sa, verb, resource, name string) bool {
	h.t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + h.ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + h.ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: h.ns, Verb: verb, Resource: resource, Name: name,
		},
	}}
	h.g.Expect(env.Client.Create(h.ctx, sar)).To(Succeed())
	return sar.Status.Allowed
}

// natsAPIObjects are the Secrets and ConfigMaps the NATS pods mount, by resource.
var natsAPIObjects = map[string][]string{
	"secrets": {"nats-site-server", "nats-mqtt-server", "nats-creds-sys-admin-hub", "nats-jetstream-key-" + cpName,
		"nats-site-ca", "default-nats-local-ca", "nats-operator-seed"},
	"configmaps": {"iofog-nats-config", "iofog-nats-jwt-bundle"},
}

// The NATS pods read their configuration and certificates from mounted volumes (the kubelet reads
// those with its own credentials) and use no Kubernetes client, so ServiceAccount nats is granted
// nothing (docs/controlplane.md#operand-rbac): with NATS up, SubjectAccessReviews on the real API
// server deny it get on every NATS Secret and ConfigMap and on another Secret and ConfigMap of the
// namespace, and list and watch. A positive control in the same namespace — the Controller's
// ServiceAccount getting a CA it imports — shows the reviews can answer yes. An earlier version's
// Role nats (every ConfigMap and Secret, bound to nats) is emptied by the next pass, once.
func TestNatsServiceAccountReadsNothing(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.createSecret("users-own", map[string]string{"k": "v"})
	g.Expect(env.Client.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "users-config", Namespace: h.ns}})).To(Succeed())
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))

	g.Expect(h.serviceAccountCan("controller", "get", "secrets", "nats-site-ca")).To(BeTrue(), "positive control: the Controller gets a CA it imports")
	denied := func(when string) {
		t.Helper()
		for resource, names := range natsAPIObjects {
			for _, name := range names {
				g.Expect(h.exists(objectOf(resource), name)).To(BeTrue(), "%s %s exists", resource, name)
				g.Expect(h.serviceAccountCan("nats", "get", resource, name)).To(BeFalse(), "%s: nats gets %s %s", when, resource, name)
			}
			for _, verb := range []string{"list", "watch"} {
				g.Expect(h.serviceAccountCan("nats", verb, resource, "")).To(BeFalse(), "%s: nats may %s %s", when, verb, resource)
			}
		}
		g.Expect(h.serviceAccountCan("nats", "get", "secrets", "users-own")).To(BeFalse(), "%s: negative control Secret", when)
		g.Expect(h.serviceAccountCan("nats", "get", "configmaps", "users-config")).To(BeFalse(), "%s: negative control ConfigMap", when)
	}
	denied("new install")

	// What an earlier operator version created: Role nats reading every ConfigMap and Secret, bound
	// to ServiceAccount nats, controlled by the ControlPlane.
	cp := h.get()
	owner := metav1.OwnerReference{APIVersion: datasancev3.GroupVersion.String(), Kind: "ControlPlane", Name: cp.Name,
		UID: cp.UID, Controller: new(true), BlockOwnerDeletion: new(true)}
	meta := metav1.ObjectMeta{Name: "nats", Namespace: h.ns, OwnerReferences: []metav1.OwnerReference{owner}}
	g.Expect(env.Client.Create(h.ctx, &rbacv1.Role{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
	}})).To(Succeed())
	g.Expect(env.Client.Create(h.ctx, &rbacv1.RoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "nats"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "nats", Namespace: h.ns}},
	})).To(Succeed())
	g.Eventually(func() bool { return h.serviceAccountCan("nats", "get", "secrets", "users-own") }).
		Should(BeTrue(), "the earlier version's Role is in force")

	g.Expect(h.readyPassWrites()).To(BeEquivalentTo(1), "one patch of the Role")
	role := &rbacv1.Role{}
	g.Expect(h.exists(role, "nats")).To(BeTrue())
	g.Expect(role.Rules).To(BeEmpty())
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Normal NatsRoleEmptied ")))
	g.Eventually(func() bool { return h.serviceAccountCan("nats", "get", "secrets", "users-own") }).
		Should(BeFalse(), "the emptied Role grants nothing")
	denied("after an upgrade")
	g.Expect(h.readyPassWrites()).To(BeZero(), "an emptied Role is not written again")

	// A Role nats the ControlPlane does not control is not the operator's: left as it is.
	g.Expect(env.Client.Delete(h.ctx, role)).To(Succeed())
	g.Eventually(func() bool { return h.exists(&rbacv1.Role{}, "nats") }).Should(BeFalse())
	users := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "nats", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"users-config"}, Verbs: []string{"get"}},
	}}
	g.Expect(env.Client.Create(h.ctx, users)).To(Succeed())
	g.Expect(h.readyPassWrites()).To(BeZero(), "a user's Role nats is not touched")
	g.Expect(h.exists(role, "nats")).To(BeTrue())
	g.Expect(role.Rules).To(Equal(users.Rules))
}

// readyPassWrites runs one pass that must end ready and returns the writes it sent.
func (h *harness) readyPassWrites() int64 {
	h.t.Helper()
	h.writes.Store(0)
	h.mustBeReady()
	return h.writes.Load()
}

// objectOf is an empty object of a core resource natsAPIObjects names.
func objectOf(resource string) client.Object {
	if resource == "configmaps" {
		return &corev1.ConfigMap{}
	}
	return &corev1.Secret{}
}
