package controlplane_test

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The JWT bundle lives as long as the JetStream data it guards: it is not owned, so deleting the
// ControlPlane leaves it (with the application accounts the Controller added), and the
// ControlPlane created again never writes it.
func TestNatsJWTBundleKeptOnDeletion(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	g := h.g
	h.controllerWritesToKubernetes()
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	h.createNatsPVCs(2)
	app := h.addAppAccount(m, "app-a", 1)
	bundle := h.configMap(jwtBundle)
	g.Expect(bundle.Data).To(Equal(map[string]string{m.accountPub + ".jwt": m.accountJWT, app.pub + ".jwt": app.jwt}),
		"the Controller's JSON Patch added the application account")
	g.Expect(bundle.OwnerReferences).To(BeEmpty())

	old := h.get()
	g.Expect(env.Client.Delete(h.ctx, old)).To(Succeed())
	collected := h.collectGarbage(old.UID)
	g.Expect(collected).To(ContainElements("StatefulSet/nats", "ConfigMap/iofog-nats-config"))
	g.Expect(collected).NotTo(ContainElement("ConfigMap/" + jwtBundle))

	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	again := h.configMap(jwtBundle)
	g.Expect(again.UID).To(Equal(bundle.UID))
	g.Expect(again.ResourceVersion).To(Equal(bundle.ResourceVersion), "never written by the new ControlPlane")
	g.Expect(again.Data).To(HaveKeyWithValue(app.pub+".jwt", app.jwt))
}

// A JWT bundle an earlier operator version created with an owner reference is released on the
// next pass, with one patch that changes nothing else, so that a deletion no longer collects it.
func TestNatsOwnedJWTBundleIsReleased(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	cp := h.get()
	bundle := h.configMap(jwtBundle)
	data := bundle.Data
	bundle.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cp, datasancev3.GroupVersion.WithKind("ControlPlane"))}
	g.Expect(env.Client.Update(h.ctx, bundle)).To(Succeed())

	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeEquivalentTo(1))
	g.Expect(h.configMap(jwtBundle).OwnerReferences).To(BeEmpty())
	g.Expect(h.configMap(jwtBundle).Data).To(Equal(data))
	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeZero())
}

// A lost JWT bundle is rebuilt from the Controller's account list with every account it held
// (a bundle with the system account only would make the image purge the application's streams).
func TestNatsJWTBundleRebuiltFromTheController(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	g := h.g
	h.controllerWritesToKubernetes()
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	h.createNatsPVCs(2)
	app := h.addAppAccount(m, "app-a", 1)
	want := h.configMap(jwtBundle).Data
	g.Expect(want).To(HaveLen(2))
	g.Expect(env.Client.Delete(h.ctx, h.configMap(jwtBundle))).To(Succeed())
	h.api.Reset()

	h.mustBeReady()
	g.Expect(h.configMap(jwtBundle).Data).To(Equal(want))
	g.Expect(h.configMap(jwtBundle).Data).To(HaveKeyWithValue(app.pub+".jwt", app.jwt))
	g.Expect(h.configMap(jwtBundle).OwnerReferences).To(BeEmpty())
	// The bootstrap is read again (the stored material lacked the bundle's system account JWT),
	// then the account list, over one session.
	g.Expect(h.api.Calls()).To(Equal([]string{
		"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/nats/bootstrap", "GET /api/v3/nats/accounts",
	}))
	g.Expect(h.rec.list()).To(ContainElement("Normal NatsJWTBundleRebuilt ConfigMap iofog-nats-jwt-bundle was missing; rebuilt it with the 2 accounts the Controller lists."))
}

// A lost JWT bundle whose accounts the Controller cannot list is not re-created with fewer keys
// while NATS runs: no bundle, the StatefulSet is not rolled (not even for a new image), and the
// reason says why; the next pass that reads the list rebuilds it and rolls the pods.
func TestNatsJWTBundleNotShrunkWhenTheControllerCannotList(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	g := h.g
	h.controllerWritesToKubernetes()
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	h.createNatsPVCs(2)
	app := h.addAppAccount(m, "app-a", 1)
	g.Expect(env.Client.Delete(h.ctx, h.configMap(jwtBundle))).To(Succeed())
	// A change the StatefulSet would roll for, and a server certificate to issue again.
	g.Expect(env.Client.Delete(h.ctx, h.secret("nats-site-server"))).To(Succeed())
	sts := h.statefulSet()
	h.api.FailAlways("GET /api/v3/nats/accounts", fake.Failure{Status: 503})
	h.update(func(cp *datasancev3.ControlPlane) { cp.Spec.Images.Nats = "registry.example.com/nats:2" })
	h.mustRequeue(controlplane.RequeueTransition)

	for range 2 {
		// NATS waits for the list (10 s); the Controller Deployment rolls for the new NATS image
		// it hands to agents and is polled sooner (5 s).
		h.mustRequeue(controlplane.RequeueWorkload)
		g.Expect(h.exists(&corev1.ConfigMap{}, jwtBundle)).To(BeFalse(), "no bundle with fewer accounts")
		g.Expect(h.statefulSet().ResourceVersion).To(Equal(sts.ResourceVersion), "the StatefulSet is not rolled")
	}
	h.expectState(datasancev3.ConditionUpdating, datasancev3.ReasonNatsAccountsUnavailable)
	g.Expect(h.trueCondition().Message).To(ContainSubstring("HTTP 503"))
	g.Expect(h.exists(&corev1.Secret{}, "nats-site-server")).To(BeTrue(), "the rest of the pass ran")

	// The list answers: the pass rebuilds the bundle, rolls the pods and waits for them; once
	// they run, the pass after is ready.
	h.api.ClearFailures()
	h.rollOut()
	h.mustBeReady()
	g.Expect(h.configMap(jwtBundle).Data).To(HaveKeyWithValue(app.pub+".jwt", app.jwt))
	g.Expect(h.configMap(jwtBundle).Data).To(HaveLen(2))
	g.Expect(h.statefulSet().Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/nats:2"), "rolled once the bundle is back")
}

// On a first install (no StatefulSet, no JetStream PVC) a Controller that cannot list its
// accounts is no reason to wait: the bundle holds the system account, nothing can be lost.
func TestNatsJWTBundleFirstInstallWithoutAccountList(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	h.api.FailAlways("GET /api/v3/nats/accounts", fake.Failure{Status: 404, Name: "NotFoundError", Message: "Cannot GET /api/v3/nats/accounts"})
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	h.g.Expect(h.configMap(jwtBundle).Data).To(Equal(map[string]string{m.accountPub + ".jwt": m.accountJWT}))
	h.g.Expect(h.api.RequestsTo("GET", "/api/v3/nats/accounts")).To(HaveLen(1))
}

// The JetStream key is never generated again while JetStream PVCs exist: a missing or empty
// Secret is JetStreamKeyMissing (terminal, one Warning Event), nothing is written, and the
// running servers keep the key of their environment. A restored Secret ends it; without PVCs
// there is nothing to read and a new key is made.
func TestNatsJetStreamKeyNotRegeneratedWhileDataExists(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	h.createNatsPVCs(2)
	name := "nats-jetstream-key-" + cpName
	key := h.secret(name).Data["jsk"]
	sts := h.statefulSet().ResourceVersion
	g.Expect(env.Client.Delete(h.ctx, h.secret(name))).To(Succeed())

	for range 2 {
		h.writes.Store(0)
		res, err := h.reconcile()
		g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error: %v", err)
		g.Expect(res.IsZero()).To(BeTrue())
		g.Expect(h.exists(&corev1.Secret{}, name)).To(BeFalse(), "no new key")
		g.Expect(h.writes.Load()).To(BeNumerically("<=", 1), "only the status patch")
	}
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonJetStreamKeyMissing)
	msg := h.trueCondition().Message
	g.Expect(msg).To(ContainSubstring("js-data-nats-0, js-data-nats-1"))
	g.Expect(msg).NotTo(ContainSubstring(string(key)), "the key is never in a message")
	warnings := 0
	for _, e := range h.rec.list() {
		if strings.HasPrefix(e, "Warning JetStreamKeyMissing") {
			warnings++
		}
	}
	g.Expect(warnings).To(Equal(1), "one Event per cause: %v", h.rec.list())
	// The running servers keep the key of their environment: the file still names it, and the
	// StatefulSet is not touched.
	g.Expect(h.configMap("iofog-nats-config").Data["server.conf"]).To(MatchRegexp(`(?m)^\s*key: \$JETSTREAM_KEY$`))
	g.Expect(h.statefulSet().ResourceVersion).To(Equal(sts))

	// An empty Secret is not filled in either.
	g.Expect(env.Client.Create(h.ctx, &corev1.Secret{ObjectMeta: metaIn(h.ns, name)})).To(Succeed())
	_, err := h.reconcile()
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue())
	g.Expect(h.secret(name).Data).To(BeEmpty())
	g.Expect(h.trueCondition().Message).To(ContainSubstring("holds no key jsk"))

	// Restored: ready again, on the same key.
	restored := h.secret(name)
	restored.Data = map[string][]byte{"jsk": key}
	g.Expect(env.Client.Update(h.ctx, restored)).To(Succeed())
	h.mustBeReady()
	g.Expect(h.serverConf()["jetstream"]).To(HaveKeyWithValue("key", string(key)))

	// No JetStream data: nothing to read, so a lost key is generated again.
	for i := range 2 {
		h.deleteNatsPVC(i)
	}
	g.Expect(env.Client.Delete(h.ctx, h.secret(name))).To(Succeed())
	gen := h.statefulSet().Generation
	h.rollOut()
	g.Expect(h.statefulSet().Generation).To(BeNumerically(">", gen), "the pods roll to start with the new key")
	h.mustBeReady()
	g.Expect(h.secret(name).Data["jsk"]).NotTo(BeEmpty())
	g.Expect(h.secret(name).Data["jsk"]).NotTo(Equal(key))
}

// A storage the volumes cannot give never reaches server.conf: while a larger
// jetStream.storageSize waits for the claim template (immutable) and then for the PVCs to grow,
// max_file_store stays at what every volume holds, and ImmutableFieldChanged says what to do.
// The documented way to grow — expand the PVCs, recreate the StatefulSet with the new template —
// ends ready with the new limit.
func TestNatsStorageFollowsTheVolumes(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	class := h.expandableStorageClass()
	h.bringUpNats(h.controlPlane(testfixture.WithJetStream(datasancev3.JetStream{StorageSize: "10Gi", StorageClassName: class})))
	h.createNatsPVCs(2)
	fileStore := func() any { return h.serverConf()["jetstream"].(map[string]any)["max_file_store"] }
	g.Expect(fileStore()).To(Equal(int64(10_000_000_000)))

	h.update(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats.JetStream.StorageSize = "20Gi" })
	h.mustRequeue(controlplane.RequeueTransition)
	_, err := h.reconcile()
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error: %v", err)
	h.expectState(datasancev3.ConditionUpdating, datasancev3.ReasonImmutableFieldChanged)
	g.Expect(h.trueCondition().Message).To(ContainSubstring("keeps its claim template 10Gi"))
	g.Expect(fileStore()).To(Equal(int64(10_000_000_000)), "server.conf keeps the storage in force")

	// The user grows the volumes: the PVCs ask for 20Gi (the class allows expansion; the
	// resize is not done yet) and the StatefulSet is deleted without its pods.
	for i := range 2 {
		pvc := h.natsPVC(i)
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = quantity("20Gi")
		g.Expect(env.Client.Update(h.ctx, pvc)).To(Succeed())
	}
	h.deleteOrphaning(h.statefulSet())
	_, err = h.reconcile()
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "error: %v", err)
	g.Expect(h.statefulSet().Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("20Gi"))
	g.Expect(h.trueCondition().Reason).To(Equal(datasancev3.ReasonImmutableFieldChanged))
	g.Expect(h.trueCondition().Message).To(ContainSubstring("PVC js-data-nats-0 holds 10Gi"))
	g.Expect(fileStore()).To(Equal(int64(10_000_000_000)), "the volumes still hold 10Gi")

	// The resize completes on one volume, then on the other.
	grow := func(i int) {
		pvc := h.natsPVC(i)
		pvc.Status.Capacity[corev1.ResourceStorage] = quantity("20Gi")
		g.Expect(env.Client.Status().Update(h.ctx, pvc)).To(Succeed())
	}
	grow(0)
	_, err = h.reconcile()
	g.Expect(err).To(HaveOccurred())
	g.Expect(h.trueCondition().Message).To(ContainSubstring("PVC js-data-nats-1 holds 10Gi"))
	g.Expect(fileStore()).To(Equal(int64(10_000_000_000)))
	// The last volume grows: server.conf gets the new limit and the pods roll to start with it;
	// once they run, the pass is ready.
	grow(1)
	h.rollOut()
	h.mustBeReady()
	g.Expect(fileStore()).To(Equal(int64(20_000_000_000)))
	g.Expect(h.statefulSet().Spec.VolumeClaimTemplates[0].Spec.StorageClassName).To(HaveValue(Equal(class)))
}
