package controlplane_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// updateAndRollOut changes the spec and runs passes until ready again: the transition to
// updating, the pass that applies the change and waits for the workload it rolls, and, once the
// rollout finished, the pass that is ready.
func (h *harness) updateAndRollOut(mutate func(*datasancev3.ControlPlane)) {
	h.t.Helper()
	h.update(mutate)
	h.mustRequeue(controlplane.RequeueTransition)
	h.expectState(datasancev3.ConditionUpdating, datasancev3.ReasonProgressing)
	h.rollOut()
	h.mustBeReady()
}

// Scale-up 2→3: both server Secrets are renewed in place with the new SANs and annotation, the
// CAs are kept, the routes follow, and the pod template does not change: the running pods reload
// server.conf and the renewed certificates (docs/controlplane.md#nats-reloads), the new pod
// starts with them.
func TestNatsScaleUp(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2)))
	siteCA, localCA := h.secret("nats-site-ca"), h.secret("default-nats-local-ca")
	siteServer := h.secret("nats-site-server")
	template := h.statefulSet().Spec.Template

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To(int32(3)) })

	g.Expect(h.secret("nats-site-ca").ResourceVersion).To(Equal(siteCA.ResourceVersion), "CAs are never rewritten")
	g.Expect(h.secret("default-nats-local-ca").ResourceVersion).To(Equal(localCA.ResourceVersion))
	g.Expect(h.secret("nats-site-server").UID).To(Equal(siteServer.UID), "renewed in place")
	g.Expect(h.secret("nats-site-server").Data["tls.crt"]).NotTo(Equal(siteServer.Data["tls.crt"]), "renewed")
	g.Expect(h.statefulSet().Spec.Template).To(Equal(template), "no rollout for new SANs")
	for _, name := range []string{"nats-site-server", "nats-mqtt-server"} {
		g.Expect(h.secret(name).Annotations).To(HaveKeyWithValue(controlplane.AnnotationNatsReplicas, "3"))
		g.Expect(h.certificate(name).DNSNames).To(Equal(natsSANs(h.ns, 3, natsLBIP)))
	}
	g.Expect(routes(h.serverConf())).To(Equal([]string{
		"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://nats-2.nats-headless:6222",
	}))
	sts := h.statefulSet()
	g.Expect(*sts.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(sts.Spec.Template.Annotations).NotTo(HaveKey(controlplane.AnnotationRestartedAt), "scale-up never restarts")
	g.Expect(h.get().Status.Nats.Replicas).To(Equal(int32(3)))
}

// Scale-down 3→2 stamps restartedAt from the reconciler's clock; later passes carry it over
// instead of restarting again.
func TestNatsScaleDown(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(3)))
	g.Expect(h.statefulSet().Spec.Template.Annotations).NotTo(HaveKey(controlplane.AnnotationRestartedAt))

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To(int32(2)) })
	stamp := natsClock.Format(time.RFC3339)
	sts := h.statefulSet()
	g.Expect(*sts.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(sts.Spec.Template.Annotations).To(HaveKeyWithValue(controlplane.AnnotationRestartedAt, stamp))
	g.Expect(routes(h.serverConf())).To(Equal([]string{"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222"}))
	g.Expect(h.certificate("nats-site-server").DNSNames).To(Equal(natsSANs(h.ns, 2, natsLBIP)))
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Normal NatsRestarted")))

	// Later: another spec change on another clock reading keeps the stamp (no second rollout).
	h.clock.SetTime(natsClock.Add(time.Hour))
	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Images.Nats = "registry.example.com/nats:2" })
	sts = h.statefulSet()
	g.Expect(sts.Spec.Template.Annotations).To(HaveKeyWithValue(controlplane.AnnotationRestartedAt, stamp))
	g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/nats:2"))
}

// Routes the Controller added to server.conf survive every rewrite; stale ordinal routes go.
func TestNatsControllerRoutesKept(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS(), testfixture.WithNATSReplicas(2)))

	// The Controller (it may manage ConfigMaps) adds a route; a stale ordinal lingers.
	cm := h.configMap("iofog-nats-config")
	const last = `"nats://nats-1.nats-headless:6222"`
	g.Expect(cm.Data["server.conf"]).To(ContainSubstring(last))
	cm.Data["server.conf"] = strings.Replace(cm.Data["server.conf"], last,
		last+`, "nats://edge-hub.example.com:6222", "nats://nats-7.nats-headless:6222"`, 1)
	g.Expect(env.Client.Update(h.ctx, cm)).To(Succeed())

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To(int32(3)) })
	g.Expect(routes(h.serverConf())).To(Equal([]string{
		"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://nats-2.nats-headless:6222",
		"nats://edge-hub.example.com:6222",
	}))
}

// jetStream.storageSize cannot change once the StatefulSet exists: the rest of the change still
// applies, the claim template keeps its size, server.conf keeps the file store the volumes hold
// (JetStream must not count on disk it does not have), and ImmutableFieldChanged is reported
// (terminal, with a Warning Event) until the spec is reverted. TestNatsStorageFollowsTheVolumes
// grows the volumes instead.
func TestNatsStorageImmutable(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))

	h.update(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Nats = &datasancev3.Nats{JetStream: &datasancev3.JetStream{StorageSize: "20Gi", MemoryStoreSize: "2Gi"}}
		cp.Spec.Images.Nats = "registry.example.com/nats:2"
	})
	h.mustRequeue(controlplane.RequeueTransition)
	res, err := h.reconcile()
	g.Expect(err).To(HaveOccurred())
	g.Expect(err.Error()).To(ContainSubstring("20Gi"))
	g.Expect(res.IsZero()).To(BeTrue())
	h.expectState(datasancev3.ConditionUpdating, datasancev3.ReasonImmutableFieldChanged)
	g.Expect(h.get().Status.Nats.Reason).To(Equal(datasancev3.ReasonImmutableFieldChanged))
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Warning ImmutableFieldChanged")))
	sts := h.statefulSet()
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()).To(Equal("10Gi"))
	g.Expect(sts.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/nats:2"))
	g.Expect(h.serverConf()["jetstream"]).To(HaveKeyWithValue("max_memory_store", int64(2_000_000_000)))
	g.Expect(h.serverConf()["jetstream"]).To(HaveKeyWithValue("max_file_store", int64(10_000_000_000)), "not the refused 20Gi")

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats.JetStream.StorageSize = "10Gi" })
}

// An existing JetStream key is reused as is; an empty one is filled in once.
func TestNatsJetStreamKeyReused(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	const key = "cHJlLWV4aXN0aW5nLWtleS1wcmUtZXhpc3Rpbmcta2V5IQ=="
	g.Expect(env.Client.Create(h.ctx, &corev1.Secret{
		ObjectMeta: metaIn(h.ns, "nats-jetstream-key-"+cpName),
		Data:       map[string][]byte{"jsk": []byte(key)},
	})).To(Succeed())
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	g.Expect(string(h.secret("nats-jetstream-key-iofog").Data["jsk"])).To(Equal(key))
	g.Expect(h.serverConf()["jetstream"]).To(HaveKeyWithValue("key", key))

	h2, _ := newNatsHarness(t)
	g.Expect(env.Client.Create(h2.ctx, &corev1.Secret{ObjectMeta: metaIn(h2.ns, "nats-jetstream-key-"+cpName)})).To(Succeed())
	h2.bringUpNats(h2.controlPlane(testfixture.WithNATS()))
	filled := h2.secret("nats-jetstream-key-iofog").Data["jsk"]
	g.Expect(filled).NotTo(BeEmpty())
	g.Expect(h2.serverConf()["jetstream"]).To(HaveKeyWithValue("key", string(filled)))
}
