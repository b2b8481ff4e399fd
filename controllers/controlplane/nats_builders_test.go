package controlplane

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
)

// natsTestCP is a ControlPlane "iofog" in namespace "edge" with NATS enabled by default,
// changed by mods.
func natsTestCP(mods ...func(*datasancev3.ControlPlane)) *datasancev3.ControlPlane {
	cp := &datasancev3.ControlPlane{
		ObjectMeta: metav1.ObjectMeta{Name: "iofog", Namespace: "edge", UID: "0b4c0ffe-0000-4000-8000-000000000001"},
		Spec: datasancev3.ControlPlaneSpec{
			Auth:     datasancev3.Auth{Mode: datasancev3.AuthModeEmbedded},
			Database: datasancev3.Database{Provider: "postgres", Host: "db"},
		},
	}
	for _, m := range mods {
		m(cp)
	}
	return cp
}

func withNatsReplicas(n int32) func(*datasancev3.ControlPlane) {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Replicas.Nats = ptr.To(n) }
}

func withJetStream(js datasancev3.JetStream) func(*datasancev3.ControlPlane) {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{JetStream: &js} }
}

func withNatsIngress(ing datasancev3.NatsIngress) func(*datasancev3.ControlPlane) {
	return func(cp *datasancev3.ControlPlane) { cp.Spec.Ingresses.Nats = &ing }
}

// natsGolden compares got, as YAML, with testdata/nats/<name>.yaml. UPDATE_GOLDEN=1 rewrites the
// file instead.
func natsGolden(t *testing.T, name string, got any) {
	t.Helper()
	j, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatalf("to YAML: %v", err)
	}
	path := filepath.Join("testdata", "nats", name+".yaml")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, y, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (UPDATE_GOLDEN=1 writes it): %v", err)
	}
	if string(want) != string(y) {
		t.Errorf("%s differs from the golden file (UPDATE_GOLDEN=1 rewrites it):\n%s", path, y)
	}
}

func TestNatsStatefulSetGolden(t *testing.T) {
	cases := map[string]struct {
		cp *datasancev3.ControlPlane
		w  natsWorkload
	}{
		"statefulset-default": {
			cp: natsTestCP(),
			w:  natsWorkload{image: DefaultNatsImage, storage: desiredNatsStorage(&natsTestCP().Spec)},
		},
		"statefulset-custom": {
			cp: natsTestCP(withNatsReplicas(3), withJetStream(datasancev3.JetStream{StorageSize: "20Gi", StorageClassName: "fast"}),
				func(cp *datasancev3.ControlPlane) { cp.Spec.Images.PullSecret = "regcred" }),
			w: natsWorkload{
				image:          "registry.example.com/nats:1",
				storage:        natsStorage{size: resource.MustParse("20Gi"), className: "fast"},
				podAnnotations: map[string]string{annotationRestartedAt: "2026-11-29T14:00:00Z"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { natsGolden(t, name, natsStatefulSet(tc.cp, tc.w)) })
	}
}

func TestNatsStatefulSet(t *testing.T) {
	g := NewWithT(t)
	cp := natsTestCP(withNatsReplicas(1)) // below the minimum: forced to 2 (spec §2.4)
	sts := natsStatefulSet(cp, natsWorkload{image: "nats:x", storage: desiredNatsStorage(&cp.Spec)})

	g.Expect(*sts.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(*sts.Spec.ServiceName).To(Equal("nats-headless"))
	g.Expect(sts.Spec.Selector.MatchLabels).To(Equal(map[string]string{
		labelName: labelNameValue, labelInstance: "iofog", labelComponent: "nats",
	}))
	g.Expect(sts.OwnerReferences).To(HaveLen(1))
	g.Expect(*sts.OwnerReferences[0].Controller).To(BeTrue())

	pod := sts.Spec.Template.Spec
	g.Expect(*pod.ServiceAccountName).To(Equal("nats"))
	g.Expect(*pod.SecurityContext.RunAsUser).To(Equal(int64(10000)))
	g.Expect(*pod.SecurityContext.RunAsGroup).To(Equal(int64(10000)))
	g.Expect(*pod.SecurityContext.FSGroup).To(Equal(int64(10000)))
	g.Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(*pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	g.Expect(pod.ImagePullSecrets).To(BeEmpty())

	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(*c.Image).To(Equal("nats:x"))
	g.Expect(*c.ImagePullPolicy).To(Equal(corev1.PullAlways))
	g.Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[*p.Name] = *p.ContainerPort
	}
	g.Expect(ports).To(Equal(map[string]int32{"client": 4222, "cluster": 6222, "leaf": 7422, "mqtt": 8883, "monitor": 8222}))
	for _, probe := range []int32{*c.ReadinessProbe.PeriodSeconds, *c.LivenessProbe.PeriodSeconds} {
		g.Expect(probe).To(BeElementOf(int32(10), int32(30)))
	}
	g.Expect(*c.ReadinessProbe.HTTPGet.Path).To(Equal("/healthz?js-enabled-only=true"))
	g.Expect(c.ReadinessProbe.HTTPGet.Port.IntValue()).To(Equal(8222))

	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			env[*e.Name] = "secret:" + *e.ValueFrom.SecretKeyRef.Name + "/" + *e.ValueFrom.SecretKeyRef.Key
		case e.ValueFrom != nil:
			env[*e.Name] = "field:" + *e.ValueFrom.FieldRef.FieldPath
		default:
			env[*e.Name] = ptr.Deref(e.Value, "")
		}
	}
	g.Expect(env).To(HaveKeyWithValue("NATS_CONF", "/etc/nats/config/server.conf"))
	g.Expect(env).To(HaveKeyWithValue("NATS_TLS_DIR", "/etc/nats/certs"))
	g.Expect(env).To(HaveKeyWithValue("NATS_SYS_USER_CRED_PATH", "/etc/nats/creds/admin-hub.creds"))
	g.Expect(env).To(HaveKeyWithValue("JETSTREAM_KEY", "secret:nats-jetstream-key-iofog/jsk"))
	g.Expect(env).To(HaveKeyWithValue("JETSTREAM_PREV_KEY", ""))
	g.Expect(env).To(HaveKeyWithValue("SELFNAME", "field:metadata.name"))

	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[*m.Name] = *m.MountPath
	}
	g.Expect(mounts).To(Equal(map[string]string{
		"nats-site-server": "/etc/nats/certs/nats-site-server",
		"nats-mqtt-server": "/etc/nats/certs/nats-mqtt-server",
		"nats-config":      "/etc/nats/config",
		"nats-jwt-bundle":  "/tmp/nats/jwt",
		"nats-creds":       "/etc/nats/creds",
		"jetstream-key":    "/etc/nats/jetstream",
		"js-data":          "/home/runner/data",
	}))

	g.Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))
	claim := sts.Spec.VolumeClaimTemplates[0]
	g.Expect(*claim.Name).To(Equal("js-data"))
	g.Expect(claim.Namespace).To(BeNil(), "a claim template has no namespace")
	g.Expect(claim.Spec.AccessModes).To(ConsistOf(corev1.ReadWriteOnce))
	g.Expect((*claim.Spec.Resources.Requests)[corev1.ResourceStorage]).To(Equal(resource.MustParse("10Gi")))
	g.Expect(claim.Spec.StorageClassName).To(BeNil())
	g.Expect(sts.Spec.Template.Annotations).To(BeEmpty())
}

func TestDesiredNatsStorage(t *testing.T) {
	cases := []struct {
		name string
		js   *datasancev3.JetStream
		want string
	}{
		{"omitted", nil, "10Gi (default class)"},
		{"size and class", &datasancev3.JetStream{StorageSize: "5Gi", StorageClassName: "fast"}, "5Gi (class fast)"},
		{"memory only", &datasancev3.JetStream{MemoryStoreSize: "2G"}, "10Gi (default class)"},
		{"zero size", &datasancev3.JetStream{StorageSize: "0"}, "10Gi (default class)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp := natsTestCP()
			if tc.js != nil {
				cp.Spec.Nats = &datasancev3.Nats{JetStream: tc.js}
			}
			NewWithT(t).Expect(desiredNatsStorage(&cp.Spec).String()).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	g.Expect(natsStorage{size: resource.MustParse("1Gi")}.equal(natsStorage{size: resource.MustParse("1024Mi")})).To(BeTrue())
	g.Expect(natsStorage{size: resource.MustParse("1Gi")}.equal(natsStorage{size: resource.MustParse("1Gi"), className: "x"})).To(BeFalse())
}

func BenchmarkNatsStatefulSet(b *testing.B) {
	cp := natsTestCP(withNatsReplicas(3))
	w := natsWorkload{image: DefaultNatsImage, storage: desiredNatsStorage(&cp.Spec)}
	b.ReportAllocs()
	for b.Loop() {
		_ = natsStatefulSet(cp, w)
	}
}
