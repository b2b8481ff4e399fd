package controlplane

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
)

func TestNatsServices(t *testing.T) {
	cases := []struct {
		name       string
		block      *datasancev3.ServiceSpec
		wantType   corev1.ServiceType
		wantPolicy corev1.ServiceExternalTrafficPolicy
	}{
		{"omitted: LoadBalancer, Local", nil, corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal},
		{"empty type: LoadBalancer", &datasancev3.ServiceSpec{}, corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal},
		{"LoadBalancer, Cluster", &datasancev3.ServiceSpec{ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster},
			corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyCluster},
		{"NodePort: Cluster", &datasancev3.ServiceSpec{Type: corev1.ServiceTypeNodePort}, corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyCluster},
		{"ClusterIP: no policy", &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal},
			corev1.ServiceTypeClusterIP, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cp := natsTestCP(func(cp *datasancev3.ControlPlane) {
				cp.Spec.Services.Nats = tc.block
				cp.Spec.Services.NatsServer = tc.block
			})
			for _, svc := range [](func(*datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration){natsService, natsServerService} {
				s := svc(cp)
				g.Expect(*s.Spec.Type).To(Equal(tc.wantType))
				if tc.wantPolicy == "" {
					g.Expect(s.Spec.ExternalTrafficPolicy).To(BeNil())
				} else {
					g.Expect(*s.Spec.ExternalTrafficPolicy).To(Equal(tc.wantPolicy))
				}
				g.Expect(s.Spec.LoadBalancerIP).To(BeNil(), "address is honoured on the controller block only")
			}
		})
	}

	g := NewWithT(t)
	cp := natsTestCP(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Nats = &datasancev3.ServiceSpec{Annotations: map[string]string{"a": "b"}, Address: "203.0.113.9"}
	})
	g.Expect(natsService(cp).Annotations).To(Equal(map[string]string{"a": "b"}))
	g.Expect(natsServerService(cp).Annotations).To(BeEmpty())
	g.Expect(natsServicePortMap(natsService(cp))).To(Equal(map[string]int32{"cluster": 6222, "leaf": 7422, "mqtt": 8883}))
	g.Expect(natsServicePortMap(natsServerService(cp))).To(Equal(map[string]int32{"client": 4222, "monitor": 8222}))
	headless := natsHeadlessService(cp)
	g.Expect(*headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(*headless.Spec.PublishNotReadyAddresses).To(BeTrue())
	g.Expect(headless.Spec.Type).To(BeNil())
	g.Expect(natsServicePortMap(headless)).To(Equal(map[string]int32{"client": 4222, "cluster": 6222, "leaf": 7422, "mqtt": 8883, "monitor": 8222}))
	for _, s := range []*corev1ac.ServiceApplyConfiguration{headless, natsService(cp), natsServerService(cp)} {
		g.Expect(s.Spec.Selector).To(Equal(selectorLabels("iofog", "nats")))
		g.Expect(s.Labels).To(HaveKeyWithValue(labelComponent, "nats"))
	}
}

func natsServicePortMap(s *corev1ac.ServiceApplyConfiguration) map[string]int32 {
	out := map[string]int32{}
	for _, p := range s.Spec.Ports {
		out[*p.Name] = *p.Port
		if p.TargetPort.IntValue() != int(*p.Port) {
			out[*p.Name] = -1
		}
	}
	return out
}

func TestNatsServerHosts(t *testing.T) {
	g := NewWithT(t)
	g.Expect(natsServerHosts("edge", 3, "nats.example.com")).To(Equal([]string{
		"nats-0.nats-headless", "nats-1.nats-headless", "nats-2.nats-headless",
		"*.nats-headless.edge.svc.cluster.local", "nats.edge.svc.cluster.local", "nats-server.edge.svc.cluster.local",
		"nats.example.com",
	}))
	g.Expect(natsServerHosts("edge", 2, "")).To(Equal([]string{
		"nats-0.nats-headless", "nats-1.nats-headless",
		"*.nats-headless.edge.svc.cluster.local", "nats.edge.svc.cluster.local", "nats-server.edge.svc.cluster.local",
	}))
}

func TestNatsHub(t *testing.T) {
	cases := []struct {
		name string
		ing  *datasancev3.NatsIngress
		want iofog.NatsHub
	}{
		{"no ingress block: defaults", nil, iofog.NatsHub{Host: "h", ServerPort: 4222, ClusterPort: 6222, LeafPort: 7422, MqttPort: 8883, HTTPPort: 8222}},
		{"some ports", &datasancev3.NatsIngress{Address: "ignored", LeafPort: 443, HTTPPort: 8080},
			iofog.NatsHub{Host: "h", ServerPort: 4222, ClusterPort: 6222, LeafPort: 443, MqttPort: 8883, HTTPPort: 8080}},
		{"all ports", &datasancev3.NatsIngress{ServerPort: 1, ClusterPort: 2, LeafPort: 3, MqttPort: 4, HTTPPort: 5},
			iofog.NatsHub{Host: "h", ServerPort: 1, ClusterPort: 2, LeafPort: 3, MqttPort: 4, HTTPPort: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp := natsTestCP(func(cp *datasancev3.ControlPlane) { cp.Spec.Ingresses.Nats = tc.ing })
			NewWithT(t).Expect(*natsHub(&cp.Spec, "h")).To(Equal(tc.want))
		})
	}
}

func TestNatsHookNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(natsCASecretNames()).To(Equal([]string{"nats-site-ca", "default-nats-local-ca"}))
	g.Expect(natsReferencedSecretNames(&natsTestCP().Spec)).To(ConsistOf("nats-site-ca", "default-nats-local-ca", "nats-site-server", "nats-mqtt-server"))
	disabled := natsTestCP(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{Enabled: ptr.To(false)} })
	g.Expect(natsReferencedSecretNames(&disabled.Spec)).To(BeEmpty())
	// The returned slices are copies: a caller appending to them cannot change the next answer.
	names := natsCASecretNames()
	names[0] = "x"
	g.Expect(natsCASecretNames()[0]).To(Equal("nats-site-ca"))
}

func TestNatsPodAnnotations(t *testing.T) {
	now := time.Date(2026, 11, 29, 15, 4, 5, 0, time.FixedZone("CET", 3600))
	live := func(replicas int32, annotations map[string]string) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{}
		s.Spec.Replicas = ptr.To(replicas)
		s.Spec.Template.Annotations = annotations
		return s
	}
	old := map[string]string{annotationRestartedAt: "2026-01-01T00:00:00Z", "other": "x"}
	cases := []struct {
		name     string
		live     *appsv1.StatefulSet
		replicas int32
		want     map[string]string
	}{
		{"scale-down stamps now in UTC", live(3, nil), 2, map[string]string{annotationRestartedAt: "2026-11-29T14:04:05Z"}},
		{"scale-down replaces an old stamp", live(4, old), 2, map[string]string{annotationRestartedAt: "2026-11-29T14:04:05Z"}},
		{"same count carries the stamp over", live(2, old), 2, map[string]string{annotationRestartedAt: "2026-01-01T00:00:00Z"}},
		{"scale-up never stamps", live(2, nil), 3, nil},
		{"scale-up carries the stamp over", live(2, old), 5, map[string]string{annotationRestartedAt: "2026-01-01T00:00:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(natsPodAnnotations(tc.live, tc.replicas, now)).To(Equal(tc.want))
		})
	}
}

func TestLiveNatsStorage(t *testing.T) {
	g := NewWithT(t)
	sts := &appsv1.StatefulSet{}
	_, ok := liveNatsStorage(sts)
	g.Expect(ok).To(BeFalse())
	claim := corev1.PersistentVolumeClaim{}
	claim.Name = "js-data"
	claim.Spec.StorageClassName = ptr.To("fast")
	claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")}
	sts.Spec.VolumeClaimTemplates = append(sts.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{}, claim)
	st, ok := liveNatsStorage(sts)
	g.Expect(ok).To(BeTrue())
	g.Expect(st.equal(natsStorage{size: resource.MustParse("20Gi"), className: "fast"})).To(BeTrue())
}

// server.conf as the reconciler builds it parses with the NATS server's own parser, and the
// bootstrap values read back from it are the ones written.
func TestNatsServerConf(t *testing.T) {
	t.Setenv("SELFNAME", "nats-0")
	g := NewWithT(t)
	cp := natsTestCP(withNatsReplicas(3), withJetStream(datasancev3.JetStream{StorageSize: "5Gi", MemoryStoreSize: "512Mi"}),
		withNatsIngress(datasancev3.NatsIngress{LeafPort: 443}))
	in := natsConfInputs{
		operatorJWT: "eyJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln", systemAccount: "ASYSTEM",
		jetStreamKey: `k"ey`, externalAddress: "2001:db8::1",
		existing: `cluster { routes: ["nats://nats-9.nats-headless:6222", "nats://edge.example.com:6222"] }`,
	}
	out, err := natsServerConf(cp, in)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := conf.Parse(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m).To(HaveKeyWithValue("operator", in.operatorJWT))
	js := m["jetstream"].(map[string]any)
	g.Expect(js).To(HaveKeyWithValue("key", `k"ey`))
	g.Expect(js).To(HaveKeyWithValue("domain", "edge"))
	g.Expect(js).To(HaveKeyWithValue("max_file_store", int64(5_000_000_000)))
	g.Expect(js).To(HaveKeyWithValue("max_memory_store", int64(512_000_000)))
	cluster := m["cluster"].(map[string]any)
	g.Expect(cluster).To(HaveKeyWithValue("name", "iofog"))
	g.Expect(cluster["routes"]).To(Equal([]any{
		"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://nats-2.nats-headless:6222",
		"nats://edge.example.com:6222",
	}))
	g.Expect(m["leafnodes"]).To(HaveKeyWithValue("advertise", "[2001:db8::1]:443"))

	operatorJWT, systemAccount := parseNatsBootstrapConf(out)
	g.Expect(operatorJWT).To(Equal(in.operatorJWT))
	g.Expect(systemAccount).To(Equal("ASYSTEM"))

	in.externalAddress = "nats.example.com:4222"
	_, err = natsServerConf(cp, in)
	g.Expect(errors.Is(err, natsconf.ErrInvalidParams)).To(BeTrue())
}

func TestParseNatsBootstrapConf(t *testing.T) {
	cases := []struct {
		name, conf, operator, account string
	}{
		{"empty", "", "", ""},
		{"garbage", "{{{ not a config", "", ""},
		{"undefined variables are placeholders", "server_name: $SELFNAME\noperator: \"J\"\nsystem_account: $SYS", "J", ""},
		{"include is not read", "include ./secrets.conf\noperator: \"J\"", "", ""},
		{"no bootstrap", "port: 4222", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op, acc := parseNatsBootstrapConf(tc.conf)
			NewWithT(t).Expect([]string{op, acc}).To(Equal([]string{tc.operator, tc.account}))
		})
	}
}

func TestNewNatsJetStreamKey(t *testing.T) {
	g := NewWithT(t)
	a, b := newNatsJetStreamKey(), newNatsJetStreamKey()
	raw, err := base64.StdEncoding.DecodeString(a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(raw).To(HaveLen(32))
	g.Expect(a).NotTo(Equal(b))
}

func TestNatsTLSSecret(t *testing.T) {
	g := NewWithT(t)
	cp := natsTestCP()
	server := natsTLSSecret(cp, "nats-site-server", map[string][]byte{"tls.crt": []byte("c")}, 3)
	g.Expect(server.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(server.Annotations).To(Equal(map[string]string{annotationNatsReplicas: "3"}))
	g.Expect(server.OwnerReferences).To(HaveLen(1))
	g.Expect(*server.OwnerReferences[0].Controller).To(BeTrue())
	g.Expect(server.OwnerReferences[0].UID).To(Equal(cp.UID))
	g.Expect(natsTLSSecret(cp, "nats-site-ca", nil, 0).Annotations).To(BeEmpty())
	g.Expect(natsJWTBundleConfigMap(cp, "AKEY", "jwt").Data).To(Equal(map[string]string{"AKEY.jwt": "jwt"}))
}
