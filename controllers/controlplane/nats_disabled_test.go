package controlplane_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// natsObjects are every object the NATS component may create, by kind.
var natsObjects = map[string][]string{
	"Secret": {"nats-operator-seed", "nats-creds-sys-admin-hub", "nats-jetstream-key-" + cpName,
		"nats-site-ca", "default-nats-local-ca", "nats-site-server", "nats-mqtt-server"},
	"ConfigMap": {"iofog-nats-config", "iofog-nats-jwt-bundle"},
	"Service":   {"nats", "nats-server", "nats-headless"},
}

// NATS disabled from the start: nothing NATS is created or called; the Controller is told.
func TestNatsDisabled(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUp(h.controlPlane()) // the harness's base ControlPlane has spec.nats.enabled: false

	g.Expect(h.exists(&appsv1.StatefulSet{}, "nats")).To(BeFalse())
	for kind, names := range natsObjects {
		for _, name := range names {
			switch kind {
			case "Secret":
				g.Expect(h.exists(&corev1.Secret{}, name)).To(BeFalse(), name)
			case "ConfigMap":
				g.Expect(h.exists(&corev1.ConfigMap{}, name)).To(BeFalse(), name)
			case "Service":
				g.Expect(h.exists(&corev1.Service{}, name)).To(BeFalse(), name)
			}
		}
	}
	for _, call := range h.api.Calls() {
		g.Expect(call).NotTo(ContainSubstring("/nats/"))
		g.Expect(call).NotTo(ContainSubstring("nats-"))
	}
	g.Expect(h.api.ImportedCAs()).To(ConsistOf("router-site-ca", "default-router-local-ca"))
	st := h.get().Status.Nats
	g.Expect(st.Enabled).To(BeFalse())
	g.Expect(st.Replicas).To(BeZero())
	g.Expect(envOf(h.deployment("controller").Spec.Template.Spec.Containers[0])).To(HaveKeyWithValue("NATS_ENABLED", "false"))
}

// Disabling NATS after it ran deletes the StatefulSet and the three Services the ControlPlane
// owns, and keeps state and identity: PVCs, the JetStream key, the CAs, certificates, bootstrap
// Secrets and ConfigMaps. Enabling it again resumes with the same key and CAs.
func TestNatsDisableAfterEnable(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	// The StatefulSet controller (absent in envtest) would have made this claim.
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "js-data-nats-0"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
		},
	}
	g.Expect(env.Client.Create(h.ctx, pvc)).To(Succeed())
	siteCA := h.secret("nats-site-ca").ResourceVersion
	jsk := string(h.secret("nats-jetstream-key-iofog").Data["jsk"])
	h.api.Reset()

	h.updateAndRollOut(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{Enabled: ptr.To(false)} })
	g.Expect(h.exists(&appsv1.StatefulSet{}, "nats")).To(BeFalse())
	for _, name := range natsObjects["Service"] {
		g.Expect(h.exists(&corev1.Service{}, name)).To(BeFalse(), name)
	}
	for _, name := range natsObjects["Secret"] {
		g.Expect(h.exists(&corev1.Secret{}, name)).To(BeTrue(), name)
	}
	for _, name := range natsObjects["ConfigMap"] {
		g.Expect(h.exists(&corev1.ConfigMap{}, name)).To(BeTrue(), name)
	}
	g.Expect(h.exists(&corev1.PersistentVolumeClaim{}, "js-data-nats-0")).To(BeTrue())
	g.Expect(h.secret("nats-site-ca").ResourceVersion).To(Equal(siteCA))
	for _, call := range h.api.Calls() {
		g.Expect(strings.Contains(call, "/nats/") || strings.Contains(call, "nats-")).To(BeFalse(), call)
	}
	g.Expect(h.get().Status.Nats.Enabled).To(BeFalse())
	g.Expect(envOf(h.deployment("controller").Spec.Template.Spec.Containers[0])).To(HaveKeyWithValue("NATS_ENABLED", "false"))
	g.Expect(h.rec.list()).To(ContainElement("Normal NatsRemoved NATS is disabled: deleted StatefulSet nats."))

	h.update(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = nil })
	for range 4 {
		h.finishRollouts()
		h.assignNatsAddress()
		if res, err := h.reconcile(); err == nil && isReadyResult(res) {
			break
		}
	}
	h.expectState(datasancev3.ConditionReady, datasancev3.ReasonReconciled)
	g.Expect(h.exists(&appsv1.StatefulSet{}, "nats")).To(BeTrue())
	g.Expect(h.secret("nats-site-ca").ResourceVersion).To(Equal(siteCA))
	g.Expect(h.serverConf()["jetstream"]).To(HaveKeyWithValue("key", jsk))
}

// Objects of the NATS names that the ControlPlane does not control are never deleted.
func TestNatsDisabledKeepsForeignObjects(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	g := h.g
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: h.ns, Name: "nats"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "client", Port: 4222}}},
	}
	g.Expect(env.Client.Create(h.ctx, foreign)).To(Succeed())
	h.bringUp(h.controlPlane())
	g.Expect(h.exists(&corev1.Service{}, "nats")).To(BeTrue())
}
