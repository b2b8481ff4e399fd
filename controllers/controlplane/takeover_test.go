package controlplane_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane/internal/resources"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// ourSelector is the operator's selector of a component's pods.
func ourSelector(component string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "iofog", "app.kubernetes.io/instance": cpName, "app.kubernetes.io/component": component}
}

// logins counts the login requests among reqs.
func logins(reqs []fake.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Method == http.MethodPost && r.Path == "/api/v3/user/login" {
			n++
		}
	}
	return n
}

// takeover drives passes over a ControlPlane the Datasance operator left, playing
// kube-controller-manager (k) and the cloud between them, until a pass ends ready. Every pass must
// succeed (no apply fails on an immutable field); after each, check runs against the world as
// it stands until the next pass. restartAt is the pass before which the operator restarts (0:
// never). It returns the messages the status showed (True condition and components).
func (h *harness) takeover(k *kubeControllers, restartAt int, check func(pass int)) []string {
	h.t.Helper()
	var seen []string
	for pass := 1; pass <= 20; pass++ {
		if pass == restartAt {
			h.restartOperator()
		}
		h.assignAddresses()
		h.assignNatsAddress()
		res, err := h.reconcile()
		h.g.Expect(err).NotTo(HaveOccurred(), "pass %d", pass)
		cp := h.get()
		seen = append(seen, trueConditionOf(cp).Reason+": "+trueConditionOf(cp).Message,
			cp.Status.Router.Reason+": "+cp.Status.Router.Message, cp.Status.Nats.Reason+": "+cp.Status.Nats.Message,
			cp.Status.Controller.Reason+": "+cp.Status.Controller.Message)
		if isReadyResult(res) && trueConditionOf(cp).Reason == datasancev3.ReasonReconciled {
			return seen
		}
		k.round()
		check(pass)
	}
	h.t.Fatalf("not ready after 20 passes: %v", h.get().Status)
	return nil
}

// A ControlPlane the Datasance operator ran (Controller on SQLite, router, NATS with two
// servers), every object as it wrote them: its Deployments and StatefulSet select by labels of
// its own, immutable, which made every apply fail. The operator deletes them orphaning their
// pods, creates its own, and hands over with no Service ever left without a ready pod: the
// router's old pod serves until the new Deployment is available; NATS is replaced one server at
// a time on the same volumes (never two pods wanting one name); the Controller's old pod stops
// before the new one would open the same SQLite volume. The status says what is going on; an
// operator restart in the middle changes nothing; the PVCs, the CAs (never imported again), the
// JetStream key, the bootstrap and credential Secrets are the Datasance operator's, kept.
func TestTakeOverFromTheDatasanceOperator(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	g := h.g
	cp := h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2), testfixture.WithSQLite())
	left := h.leaveDatasanceControlPlane(cp, &m, 2)
	k := &kubeControllers{h: h}

	// The Datasance operator ran a 3.7 Controller on the SQLite claim: nothing is replaced until a
	// person has dealt with the 3.7 database this operator's 3.8+ Controller cannot migrate.
	writes := h.writes.Load()
	_, err := h.reconcile()
	g.Expect(err).To(HaveOccurred())
	c := h.trueCondition()
	g.Expect(c.Reason).To(Equal(datasancev3.ReasonSQLiteDatabaseAtRisk))
	g.Expect(c.Message).To(ContainSubstring("ghcr.io/datasance/controller:3.7.3, a 3.7 Controller"))
	g.Expect(h.writes.Load()-writes).To(Equal(int64(1)), "only the status is written")
	g.Expect(k.datasancePods("controller")).NotTo(BeEmpty())
	h.update(func(cp *datasancev3.ControlPlane) {
		cp.Annotations = map[string]string{resources.AnnotationSQLiteMountConfirmed: "true"}
	})
	// The Datasance operator created the JetStream key owned by the ControlPlane; the operator
	// may not remove that reference here (OwnerReferencesPermissionEnforcement, as on OpenShift,
	// and delete on Secrets by name only), so nothing is replaced until an administrator has.
	jsk := "nats-jetstream-key-" + cpName
	env.ExpectRefused("patch", "", "secrets", h.ns, jsk,
		"removing the owner reference needs delete on the Secret, which the operator holds by name only")
	writes = h.writes.Load()
	_, err = h.reconcile()
	g.Expect(err).To(HaveOccurred())
	c = h.trueCondition()
	g.Expect(c.Reason).To(Equal(datasancev3.ReasonDataStoreOwned))
	g.Expect(h.writes.Load()-writes).To(Equal(int64(2)), "the refused release and the status")
	g.Expect(k.datasancePods("controller")).NotTo(BeEmpty())
	g.Expect(h.exists(&appsv1.Deployment{}, "router")).To(BeTrue(), "nothing of the Datasance operator's is replaced yet")
	h.releaseAsAdministrator(c.Message, jsk)

	// While its pod runs, the Datasance operator's 3.7.3 Controller answers on Service controller
	// and rejects the embedded admin's login (401): no login is sent to it, so no rejection is
	// counted and no login is held; the first login goes to this operator's Controller.
	h.api.FailAlways("POST /api/v3/user/login", fake.Failure{Status: http.StatusUnauthorized, Name: "InvalidCredentialsError", Message: "Invalid credentials"})
	oldControllerServes := true
	seen := h.takeover(k, 4, func(pass int) {
		if oldControllerServes {
			g.Expect(logins(h.api.Requests())).To(BeZero(), "pass %d: a login sent while the Datasance operator's Controller answers", pass)
			if len(k.datasancePods("controller")) == 0 {
				oldControllerServes = false
				h.api.ClearFailures()
			}
		}
		g.Expect(h.get().Status.Controller.RejectedLogins).To(BeNil(), "pass %d: a rejected login was counted", pass)
		for _, svc := range []string{"router", "nats-headless", "nats", "nats-server"} {
			g.Expect(k.readyPodsOf(svc)).To(BeNumerically(">=", 1), "pass %d: Service %s selects no ready pod", pass, svc)
		}
		natsReady := 0
		for _, p := range k.pods() {
			if p.Labels["app.kubernetes.io/component"] == "nats" && podReady(&p) {
				natsReady++
			}
		}
		g.Expect(natsReady).To(BeNumerically(">=", 1), "pass %d: one NATS server at a time", pass)
		g.Expect(k.conflicts).To(BeEmpty(), "pass %d: the StatefulSet asked for a pod name an old pod held", pass)
		g.Expect(k.datasancePods("controller") != nil && k.operatorPods("controller") != nil).To(BeFalse(),
			"pass %d: two Controllers on one SQLite volume: %v and %v", pass, k.datasancePods("controller"), k.operatorPods("controller"))
	})
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonReconciled)

	g.Expect(seen).To(ContainElement(
		"TakingOver: Taking over from the Datasance operator: waiting for the garbage collector to release the pods of Deployment router, Deployment controller, StatefulSet nats."))
	g.Expect(seen).To(ContainElement(ContainSubstring("1 pod of its Deployment router keep serving until this operator's is available")))
	g.Expect(seen).To(ContainElement(ContainSubstring("Deployment router is available; retiring 1 pod of its predecessor")))
	g.Expect(seen).To(ContainElement(ContainSubstring("before this operator's Controller opens the same SQLite volume")))
	g.Expect(seen).To(ContainElement(ContainSubstring("0 of 2 NATS servers replaced; replacing pod nats-0")))
	g.Expect(seen).To(ContainElement(ContainSubstring("1 of 2 NATS servers replaced; replacing pod nats-1")))
	for _, w := range []string{"Deployment router", "Deployment controller", "StatefulSet nats"} {
		g.Expect(h.rec.list()).To(ContainElement(fmt.Sprintf(
			"Normal TakingOver Deleted %s of the Datasance operator, orphaning its pods: they keep serving until this operator's replace them.", w)))
	}

	// Only the operator's workloads and pods remain, selected by its labels, unmarked.
	g.Expect(k.datasancePods("controller")).To(BeEmpty())
	g.Expect(k.datasancePods("router")).To(BeEmpty())
	g.Expect(k.datasancePods("nats")).To(BeEmpty())
	var rss appsv1.ReplicaSetList
	g.Expect(env.Client.List(h.ctx, &rss, client.InNamespace(h.ns))).To(Succeed())
	g.Expect(rss.Items).To(BeEmpty())
	for _, c := range []string{"controller", "router"} {
		d := h.deployment(c)
		g.Expect(d.Spec.Selector.MatchLabels).To(Equal(ourSelector(c)))
		g.Expect(d.Annotations).NotTo(HaveKey("kubeopera.io/taking-over-from"))
		g.Expect(h.service(c).Spec.Selector).To(Equal(ourSelector(c)))
	}
	sts := h.statefulSet()
	g.Expect(sts.Spec.Selector.MatchLabels).To(Equal(ourSelector("nats")))
	g.Expect(sts.Spec.Replicas).To(HaveValue(Equal(int32(2))))
	g.Expect(sts.Annotations).NotTo(HaveKey("kubeopera.io/taking-over-from"))
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Labels).To(Equal(ourSelector("nats")))
	for _, svc := range []string{"nats-headless", "nats", "nats-server"} {
		g.Expect(h.service(svc).Spec.Selector).To(Equal(ourSelector("nats")), svc)
	}
	k.round()
	g.Expect(k.operatorPods("nats")).To(ConsistOf("nats-0", "nats-1"))
	g.Expect(k.conflicts).To(BeEmpty())

	// The data and trust the Datasance operator made are the ones in use.
	h.expectKept(left)
	sqlite := &corev1.PersistentVolumeClaim{}
	g.Expect(h.exists(sqlite, "controller-sqlite")).To(BeTrue())
	g.Expect(sqlite.OwnerReferences).To(BeEmpty(), "the database outlives the ControlPlane")
	for _, ca := range []string{"router-site-ca", "default-router-local-ca", "nats-site-ca", "default-nats-local-ca"} {
		g.Expect(h.api.CAImports(ca)).To(BeEmpty(), "the Controller holds CA %s already: not imported again", ca)
	}
	g.Expect(h.deployment("controller").Spec.Template.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", "controller-sqlite")))

	// The takeover is over: a pass writes nothing.
	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeZero())
}

// With an external database the Controller's old and new pods may overlap: Service controller
// always has a ready pod, the old one retired only once the new Deployment is available, and
// the Datasance operator's Ingress (pot-controller, routing the host to a port name Service
// controller no longer has) is deleted. NATS off: its StatefulSet is not looked at.
func TestTakeOverTheControllerWithAnExternalDatabase(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	cp := h.controlPlane(testfixture.WithControllerIngress(datasancev3.ControllerIngress{Host: "controller.example.com"}),
		testfixture.WithPublicURL("https://controller.example.com"))
	left := h.leaveDatasanceControlPlane(cp, nil, 0)
	k := &kubeControllers{h: h}
	overlapped := false
	seen := h.takeover(k, 0, func(pass int) {
		for _, svc := range []string{"controller", "router"} {
			g.Expect(k.readyPodsOf(svc)).To(BeNumerically(">=", 1), "pass %d: Service %s selects no ready pod", pass, svc)
		}
		overlapped = overlapped || k.datasancePods("controller") != nil && k.operatorPods("controller") != nil
	})
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonReconciled)
	g.Expect(overlapped).To(BeTrue(), "with an external database the old Controller serves until the new one is available")
	g.Expect(seen).To(ContainElement(ContainSubstring("Deployment controller is available; retiring 1 pod of its predecessor")))
	g.Expect(h.exists(&networkingv1.Ingress{}, "pot-controller")).To(BeFalse())
	g.Expect(h.exists(&networkingv1.Ingress{}, "controller")).To(BeTrue())
	g.Expect(h.service("controller").Spec.Selector).To(Equal(ourSelector("controller")))
	g.Expect(k.datasancePods("controller")).To(BeEmpty())
	g.Expect(h.exists(&appsv1.StatefulSet{}, "nats")).To(BeFalse())
	h.expectKept(left)
}

// A Deployment or StatefulSet of an operand's name that is neither the operator's nor
// recognisably the Datasance operator's is refused before anything is written: terminal
// ForeignWorkload naming it, one Warning Event, and passes that write nothing, until it goes
// (its deletion is mapped back to the ControlPlane).
func TestForeignWorkloadIsRefused(t *testing.T) {
	t.Parallel()
	userLabels := map[string]string{"app": "mine"}
	for _, tc := range []struct {
		name     string
		workload func(cp *datasancev3.ControlPlane) client.Object
		nats     bool
		message  string
	}{
		{
			name: "a user's Deployment router",
			workload: func(cp *datasancev3.ControlPlane) client.Object {
				return foreignDeployment(cp.Namespace, "router", userLabels, nil)
			},
			message: "Deployment router in namespace %s",
		},
		{
			name: "the Datasance operator's labels, but controlled by another object",
			workload: func(cp *datasancev3.ControlPlane) client.Object {
				return foreignDeployment(cp.Namespace, "controller", testfixture.DatasanceLabels(cp, "controller"),
					&metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "x", UID: "uid-x", Controller: ptr.To(true)})
			},
			message: "Deployment controller in namespace %s",
		},
		{
			name: "a user's StatefulSet nats",
			workload: func(cp *datasancev3.ControlPlane) client.Object {
				d := foreignDeployment(cp.Namespace, "nats", userLabels, nil)
				return &appsv1.StatefulSet{ObjectMeta: d.ObjectMeta, Spec: appsv1.StatefulSetSpec{
					Selector: d.Spec.Selector, Template: d.Spec.Template, ServiceName: "nats-headless"}}
			},
			nats:    true,
			message: "StatefulSet nats in namespace %s",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			g := h.g
			mods := []testfixture.Mod{}
			if tc.nats {
				mods = append(mods, testfixture.WithNATS())
			}
			h.create(h.controlPlane(mods...))
			cp := h.get()
			obj := tc.workload(cp)
			g.Expect(env.Client.Create(h.ctx, obj)).To(Succeed())
			h.mustRequeue(controlplane.RequeueTransition)

			h.writes.Store(0)
			h.cpWrites.Store(0)
			_, err := h.reconcile()
			g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error: %v", err)
			c := h.trueCondition()
			g.Expect(c.Reason).To(Equal(datasancev3.ReasonForeignWorkload))
			g.Expect(c.Message).To(HavePrefix(fmt.Sprintf(tc.message, h.ns)))
			g.Expect(h.writes.Load()).To(Equal(h.cpWrites.Load()), "nothing but the ControlPlane's status is written")
			g.Expect(h.warnings(datasancev3.ReasonForeignWorkload)).To(Equal(1))
			g.Expect(h.api.Calls()).To(BeEmpty())
			for _, name := range []string{"controller", "router"} {
				g.Expect(h.exists(&corev1.Service{}, name)).To(BeFalse())
			}

			h.writes.Store(0)
			_, err = h.reconcile()
			g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
			g.Expect(h.writes.Load()).To(BeZero(), "a refusal already recorded writes nothing")
			g.Expect(h.warnings(datasancev3.ReasonForeignWorkload)).To(Equal(1), "one Event per cause")
			g.Expect(h.exists(obj, obj.GetName())).To(BeTrue(), "the foreign workload is never touched")

			g.Expect(env.Client.Delete(h.ctx, obj)).To(Succeed())
			g.Expect(controlplane.ControlPlanesForWorkload(h.r, h.ctx, obj)).To(ConsistOf(reconcile.Request{NamespacedName: h.key(cpName)}))
			_, err = h.reconcile()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.trueCondition().Reason).NotTo(Equal(datasancev3.ReasonForeignWorkload))
		})
	}
}

// The workload watch maps only workloads of an operand's name that no ControlPlane controls.
func TestWorkloadWatchMapsOnlyForeignOperandNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.create(h.controlPlane())
	cp := h.get()
	owned := foreignDeployment(h.ns, "router", ourSelector("router"), &metav1.OwnerReference{
		APIVersion: datasancev3.GroupVersion.String(), Kind: "ControlPlane", Name: cp.Name, UID: cp.UID, Controller: ptr.To(true)})
	g.Expect(controlplane.ControlPlanesForWorkload(h.r, h.ctx, owned)).To(BeEmpty(), "Owns maps it")
	g.Expect(controlplane.ControlPlanesForWorkload(h.r, h.ctx, foreignDeployment(h.ns, "web", nil, nil))).To(BeEmpty(), "not an operand's name")
	g.Expect(controlplane.ControlPlanesForWorkload(h.r, h.ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "router"}})).
		To(BeEmpty(), "router is a Deployment")
	g.Expect(controlplane.ControlPlanesForWorkload(h.r, h.ctx, foreignDeployment(h.ns, "controller", nil, nil))).
		To(ConsistOf(reconcile.Request{NamespacedName: h.key(cpName)}))
}

// foreignDeployment is a Deployment selecting by sel, controlled by controller (nil: nothing).
func foreignDeployment(ns, name string, sel map[string]string, controller *metav1.OwnerReference) *appsv1.Deployment {
	if sel == nil {
		sel = map[string]string{"app": name}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "example.com/" + strings.ToLower(name) + ":1"}}},
			},
		},
	}
	if controller != nil {
		d.OwnerReferences = []metav1.OwnerReference{*controller}
	}
	return d
}

// Where the Datasance operator never ran, taking over costs nothing: a first install and a
// ready pass list no pods and no ReplicaSets (they are read uncached, so each would be a request).
func TestFreshInstallListsNoPods(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	var lists atomic.Int64
	h.r.Client = interceptor.NewClient(noWatch{h.r.Client}, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			switch list.(type) {
			case *corev1.PodList, *appsv1.ReplicaSetList:
				lists.Add(1)
			}
			return c.List(ctx, list, opts...)
		},
	})
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithSQLite()))
	h.mustBeReady()
	h.g.Expect(lists.Load()).To(BeZero())
}
