package controlplane_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// reconcileNamed runs one pass of the ControlPlane name in the harness's namespace.
func (h *harness) reconcileNamed(name string) (ctrl.Result, error) {
	return h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: h.key(name)})
}

// trueConditionNamed is the True condition of the ControlPlane name.
func (h *harness) trueConditionNamed(name string) metav1.Condition {
	h.t.Helper()
	cp := &datasancev3.ControlPlane{}
	h.g.Expect(env.Client.Get(h.ctx, h.key(name), cp)).To(Succeed())
	return trueConditionOf(cp)
}

// warnings counts the recorded Warning Events of reason.
func (h *harness) warnings(reason string) int {
	n := 0
	for _, e := range h.rec.list() {
		if strings.HasPrefix(e, "Warning "+reason+" ") {
			n++
		}
	}
	return n
}

// expectRefusedQuietly runs a pass of the duplicate name and expects it to end without a requeue,
// an error, a write or a Controller call.
func (h *harness) expectRefusedQuietly(name string) {
	h.t.Helper()
	writes, calls := h.writes.Load(), len(h.api.Calls())
	res, err := h.reconcileNamed(name)
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(res).To(Equal(ctrl.Result{}), "terminal: no requeue")
	h.g.Expect(h.writes.Load()-writes).To(BeZero(), "a refused duplicate writes nothing on later passes")
	h.g.Expect(h.api.Calls()).To(HaveLen(calls), "nor calls the Controller")
}

// collectGarbageOf plays the garbage collector, which envtest does not run: it deletes the
// namespace's objects that owner controls.
func (h *harness) collectGarbageOf(owner types.UID) {
	h.t.Helper()
	lists := []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &corev1.ServiceList{},
		&corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.ServiceAccountList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
		&networkingv1.IngressList{}, &policyv1.PodDisruptionBudgetList{}}
	for _, l := range lists {
		h.g.Expect(env.Client.List(h.ctx, l, client.InNamespace(h.ns))).To(Succeed())
		items, err := metaItems(l)
		h.g.Expect(err).NotTo(HaveOccurred())
		for _, o := range items {
			if ref := metav1.GetControllerOf(o); ref != nil && ref.UID == owner {
				h.g.Expect(client.IgnoreNotFound(env.Client.Delete(h.ctx, o))).To(Succeed())
			}
		}
	}
}

// A second ControlPlane in a namespace where one runs is refused: one status write and one
// Warning Event, then nothing, whatever its name sorts as, across an operator restart; the
// first keeps running untouched. When the first is deleted, the delete watch queues the second,
// which then deploys.
func TestSecondControlPlaneInANamespaceIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	first := h.get()

	const second = "aaa-sorts-first"
	h.create(h.controlPlane(testfixture.Named(second)))
	writes, calls := h.writes.Load(), len(h.api.Calls())
	res, err := h.reconcileNamed(second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{}))
	g.Expect(h.writes.Load()-writes).To(Equal(int64(1)), "only its own status")
	g.Expect(h.api.Calls()).To(HaveLen(calls), "no Controller call")
	c := h.trueConditionNamed(second)
	g.Expect(c.Type).To(Equal(datasancev3.ConditionDeploying))
	g.Expect(c.Reason).To(Equal(datasancev3.ReasonDuplicateControlPlane))
	g.Expect(c.Message).To(ContainSubstring("ControlPlane " + cpName + " already runs in namespace " + h.ns))
	g.Expect(h.warnings(datasancev3.ReasonDuplicateControlPlane)).To(Equal(1))

	h.expectRefusedQuietly(second)
	g.Expect(h.warnings(datasancev3.ReasonDuplicateControlPlane)).To(Equal(1), "one Event per cause")

	// The first is untouched and still the owner of everything.
	h.mustBeReady()
	svc := &corev1.Service{}
	g.Expect(env.Client.Get(h.ctx, h.key("controller"), svc)).To(Succeed())
	g.Expect(metav1.GetControllerOf(svc).UID).To(Equal(first.UID))

	// A restarted operator (nothing in memory) decides the same.
	h.restartOperator()
	h.expectRefusedQuietly(second)
	h.mustBeReady()
	g.Expect(h.warnings(datasancev3.ReasonDuplicateControlPlane)).To(Equal(1))

	// The first goes: the delete watch queues the second, which takes over once the garbage
	// collector removed the first's objects.
	g.Expect(env.Client.Delete(h.ctx, first)).To(Succeed())
	reqs := controlplane.OtherControlPlanesOnDelete(h.r, h.ctx, first)
	g.Expect(reqs).To(Equal([]reconcile.Request{{NamespacedName: h.key(second)}}))
	h.collectGarbageOf(first.UID)
	// Its deploying condition is current already: the pass deploys at once.
	_, err = h.reconcileNamed(second)
	g.Expect(err).NotTo(HaveOccurred())
	c = h.trueConditionNamed(second)
	g.Expect(c.Type).To(Equal(datasancev3.ConditionDeploying))
	g.Expect(c.Reason).NotTo(Equal(datasancev3.ReasonDuplicateControlPlane))
	g.Expect(env.Client.Get(h.ctx, h.key("controller"), svc)).To(Succeed())
	g.Expect(metav1.GetControllerOf(svc).Name).To(Equal(second))
}

// Two ControlPlanes created before either reconciled: the older one (same second: the name that
// sorts first) deploys, whichever is reconciled first; the other is refused before it writes
// anything else.
func TestSecondControlPlaneRefusedBeforeTheFirstReconciled(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane())
	const second = "zzz-created-second"
	h.create(h.controlPlane(testfixture.Named(second)))

	writes := h.writes.Load()
	res, err := h.reconcileNamed(second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{}))
	g.Expect(h.writes.Load()-writes).To(Equal(int64(1)), "only its own status")
	g.Expect(h.trueConditionNamed(second).Reason).To(Equal(datasancev3.ReasonDuplicateControlPlane))
	g.Expect(h.exists(&corev1.Service{}, "controller")).To(BeFalse())

	h.bringUpExisting()
	h.expectRefusedQuietly(second)
}
