package resources

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/nats-io/nats-server/v2/conf"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/natsconf"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// natsGoldenUID is the ControlPlane UID in the golden files' owner references.
const natsGoldenUID = "0b4c0ffe-0000-4000-8000-000000000001"

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
		w  NatsWorkload
	}{
		"statefulset-default": {
			cp: testfixture.ControlPlane(testfixture.WithUID(natsGoldenUID)),
			w:  NatsWorkload{Image: DefaultNatsImage, Storage: DesiredNatsStorage(&testfixture.ControlPlane().Spec)},
		},
		"statefulset-custom": {
			cp: testfixture.ControlPlane(testfixture.WithUID(natsGoldenUID), testfixture.WithNATSReplicas(5),
				testfixture.WithJetStream(datasancev3.JetStream{StorageSize: "20Gi", StorageClassName: "fast"}),
				func(cp *datasancev3.ControlPlane) { cp.Spec.Images.PullSecret = "regcred" }),
			w: NatsWorkload{
				Image:          "registry.example.com/nats:1",
				Storage:        NatsStorage{Size: resource.MustParse("20Gi"), ClassName: "fast"},
				PodAnnotations: map[string]string{AnnotationRestartedAt: "2026-11-29T14:00:00Z"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { natsGolden(t, name, NatsStatefulSet(tc.cp, tc.w)) })
	}
}

func TestNatsStatefulSet(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane(testfixture.WithNATSReplicas(1)) // below the minimum: forced to 2 (docs/controlplane.md#replicas)
	sts := NatsStatefulSet(cp, NatsWorkload{Image: "nats:x", Storage: DesiredNatsStorage(&cp.Spec)})

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
	g.Expect(env).To(HaveKeyWithValue("NATS_CONF", "/etc/nats/certs/server-conf/server.conf"), "inside the TLS directory the wrapper watches")
	g.Expect(env).To(HaveKeyWithValue("NATS_SSL_DIR", "/etc/nats/certs"))
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
		"nats-config":      "/etc/nats/certs/server-conf",
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
			cp := testfixture.ControlPlane()
			if tc.js != nil {
				cp.Spec.Nats = &datasancev3.Nats{JetStream: tc.js}
			}
			NewWithT(t).Expect(DesiredNatsStorage(&cp.Spec).String()).To(Equal(tc.want))
		})
	}
	g := NewWithT(t)
	g.Expect(NatsStorage{Size: resource.MustParse("1Gi")}.Equal(NatsStorage{Size: resource.MustParse("1024Mi")})).To(BeTrue())
	g.Expect(NatsStorage{Size: resource.MustParse("1Gi")}.Equal(NatsStorage{Size: resource.MustParse("1Gi"), ClassName: "x"})).To(BeFalse())
}

func BenchmarkNatsStatefulSet(b *testing.B) {
	cp := testfixture.ControlPlane(testfixture.WithNATSReplicas(3))
	w := NatsWorkload{Image: DefaultNatsImage, Storage: DesiredNatsStorage(&cp.Spec)}
	b.ReportAllocs()
	for b.Loop() {
		_ = NatsStatefulSet(cp, w)
	}
}

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
			cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
				cp.Spec.Services.Nats = tc.block
				cp.Spec.Services.NatsServer = tc.block
			})
			for _, svc := range [](func(*datasancev3.ControlPlane) *corev1ac.ServiceApplyConfiguration){NatsService, NatsServerService} {
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
	cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Nats = &datasancev3.ServiceSpec{Annotations: map[string]string{"a": "b"}, Address: "203.0.113.9"}
	})
	g.Expect(NatsService(cp).Annotations).To(Equal(map[string]string{"a": "b"}))
	g.Expect(NatsServerService(cp).Annotations).To(BeEmpty())
	g.Expect(natsServicePortMap(NatsService(cp))).To(Equal(map[string]int32{"cluster": 6222, "leaf": 7422, "mqtt": 8883}))
	g.Expect(natsServicePortMap(NatsServerService(cp))).To(Equal(map[string]int32{"client": 4222}),
		"the unauthenticated monitor is not on the exposed Service by default")
	exposed := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) { cp.Spec.Nats = &datasancev3.Nats{ExposeMonitor: true} })
	g.Expect(natsServicePortMap(NatsServerService(exposed))).To(Equal(map[string]int32{"client": 4222, "monitor": 8222}), "exposeMonitor")
	headless := NatsHeadlessService(cp)
	g.Expect(*headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(*headless.Spec.PublishNotReadyAddresses).To(BeTrue())
	g.Expect(headless.Spec.Type).To(BeNil())
	g.Expect(natsServicePortMap(headless)).To(Equal(map[string]int32{"client": 4222, "cluster": 6222, "leaf": 7422, "mqtt": 8883, "monitor": 8222}))
	for _, s := range []*corev1ac.ServiceApplyConfiguration{headless, NatsService(cp), NatsServerService(cp)} {
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
	g.Expect(NatsServerHosts("edge", 3, "nats.example.com")).To(Equal([]string{
		"nats-0.nats-headless", "nats-1.nats-headless", "nats-2.nats-headless",
		"*.nats-headless.edge.svc.cluster.local", "nats.edge.svc.cluster.local", "nats-server.edge.svc.cluster.local",
		"nats.example.com",
	}))
	g.Expect(NatsServerHosts("edge", 2, "")).To(Equal([]string{
		"nats-0.nats-headless", "nats-1.nats-headless",
		"*.nats-headless.edge.svc.cluster.local", "nats.edge.svc.cluster.local", "nats-server.edge.svc.cluster.local",
	}))
}

func TestNatsHookNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(NatsCASecretNames()).To(Equal([]string{"nats-site-ca", "default-nats-local-ca"}))
	g.Expect(NatsReferencedSecretNames(&testfixture.ControlPlane().Spec)).To(ConsistOf("nats-site-ca", "default-nats-local-ca", "nats-site-server", "nats-mqtt-server"))
	disabled := testfixture.ControlPlane(testfixture.WithoutNATS())
	g.Expect(NatsReferencedSecretNames(&disabled.Spec)).To(BeEmpty())
	// The returned slices are copies: a caller appending to them cannot change the next answer.
	names := NatsCASecretNames()
	names[0] = "x"
	g.Expect(NatsCASecretNames()[0]).To(Equal("nats-site-ca"))
}

// server.conf as the reconciler builds it parses with the NATS server's own parser, and the
// bootstrap values read back from it are the ones written; the JetStream key is the one of the
// pod's environment, never in the file.
func TestNatsServerConf(t *testing.T) {
	t.Setenv("SELFNAME", "nats-0")
	t.Setenv(natsconf.JetStreamKeyEnv, `k"ey`)
	g := NewWithT(t)
	cp := testfixture.ControlPlane(testfixture.WithNATSReplicas(3), testfixture.WithJetStream(datasancev3.JetStream{StorageSize: "5Gi", MemoryStoreSize: "512Mi"}),
		testfixture.WithNATSIngress(datasancev3.NatsIngress{LeafPort: 443}))
	in := NatsConfInputs{
		OperatorJWT: "eyJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2ln", SystemAccount: "ASYSTEM",
		ExternalAddress: "2001:db8::1",
		Existing:        `cluster { routes: ["nats://nats-9.nats-headless:6222", "nats://edge.example.com:6222"] }`,
	}
	out, err := NatsServerConf(cp, in)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := conf.Parse(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m).To(HaveKeyWithValue("operator", in.OperatorJWT))
	js := m["jetstream"].(map[string]any)
	g.Expect(js).To(HaveKeyWithValue("key", `k"ey`))
	g.Expect(out).NotTo(ContainSubstring(`k\"ey`), "the key is not in the file")
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

	operatorJWT, systemAccount := ParseNatsBootstrapConf(out)
	g.Expect(operatorJWT).To(Equal(in.OperatorJWT))
	g.Expect(systemAccount).To(Equal("ASYSTEM"))

	in.ExternalAddress = "nats.example.com:4222"
	_, err = NatsServerConf(cp, in)
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
			op, acc := ParseNatsBootstrapConf(tc.conf)
			NewWithT(t).Expect([]string{op, acc}).To(Equal([]string{tc.operator, tc.account}))
		})
	}
}

func TestNatsCertificates(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane()
	specs := NatsCertificates("edge", 3, "nats.example.com")
	g.Expect(specs).To(HaveLen(4))
	g.Expect(specs[0].IsCA() && specs[1].IsCA()).To(BeTrue(), "CAs first")
	g.Expect(specs[2]).To(Equal(TLSSecretSpec{Name: "nats-site-server", CommonName: "iofog-nats", CAName: "nats-site-ca",
		Hosts: NatsServerHosts("edge", 3, "nats.example.com"), Annotations: map[string]string{AnnotationNatsReplicas: "3"}}))
	g.Expect(specs[3].CAName).To(Equal("default-nats-local-ca"))
	server := TLSSecret(cp, ComponentNats, specs[2], map[string][]byte{"tls.crt": []byte("c")})
	g.Expect(*server.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(server.Annotations).To(Equal(map[string]string{AnnotationNatsReplicas: "3"}))
	g.Expect(server.OwnerReferences).To(HaveLen(1))
	g.Expect(*server.OwnerReferences[0].Controller).To(BeTrue())
	g.Expect(*server.OwnerReferences[0].UID).To(Equal(cp.UID))
	g.Expect(TLSSecret(cp, ComponentNats, specs[0], nil).Annotations).To(BeEmpty())
}

// The JWT bundle holds the bootstrap's system account and the Controller's hub accounts (the
// system account and application accounts, not a leaf node's system account), and carries no
// owner reference: it lives as long as the JetStream data it guards.
func TestNatsJWTBundle(t *testing.T) {
	g := NewWithT(t)
	app := 7
	accounts := []iofog.NatsAccount{
		{Name: "SYS", PublicKey: "ASYS", JWT: "sys.from.list", IsSystem: true},
		{Name: "leaf-sys-edge1", PublicKey: "ALEAF", JWT: "leaf.jwt", IsLeafSystem: true},
		{Name: "app-a", PublicKey: "AAPP", JWT: "app.jwt", ApplicationID: &app},
		{Name: "orphan", PublicKey: "AORPHAN", JWT: "orphan.jwt"},
	}
	g.Expect(NatsJWTBundle("ASYS", "sys.from.bootstrap", accounts)).To(Equal(map[string]string{
		"ASYS.jwt": "sys.from.bootstrap", "AAPP.jwt": "app.jwt",
	}))
	g.Expect(NatsJWTBundle("ASYS", "sys.jwt", nil)).To(Equal(map[string]string{"ASYS.jwt": "sys.jwt"}))

	cm := NatsJWTBundleConfigMap(testfixture.ControlPlane(), map[string]string{"AKEY.jwt": "jwt"})
	g.Expect(cm.Data).To(Equal(map[string]string{"AKEY.jwt": "jwt"}))
	g.Expect(cm.OwnerReferences).To(BeEmpty())
	g.Expect(cm.Labels).To(HaveKeyWithValue(LabelManagedBy, LabelManagedByValue), "in the operator's ConfigMap cache")
}

// A file store in force other than the spec's reaches server.conf as a size NATS reads, never
// above the volume: canonical quantities as they are (a binary suffix becomes the smaller
// decimal unit), anything else in bytes.
func TestNatsFileStoreInForce(t *testing.T) {
	t.Setenv("SELFNAME", "nats-0")
	g := NewWithT(t)
	for q, want := range map[string]string{"5Gi": "5Gi", "1024Mi": "1Gi", "10737418240": "10737418240", "1500M": "1500M", "1.5Gi": "1536Mi", "5e9": "5000000000"} {
		g.Expect(NatsFileStoreSize(resource.MustParse(q))).To(Equal(want), q)
	}
	cp := testfixture.ControlPlane(testfixture.WithJetStream(datasancev3.JetStream{StorageSize: "20Gi"}))
	t.Setenv(natsconf.JetStreamKeyEnv, "k")
	in := NatsConfInputs{OperatorJWT: "J", SystemAccount: "ASYSTEM"}
	for fileStore, bytes := range map[string]int64{"": 20_000_000_000, "5Gi": 5_000_000_000, "10737418240": 10_737_418_240} {
		in.FileStore = fileStore
		out, err := NatsServerConf(cp, in)
		g.Expect(err).NotTo(HaveOccurred())
		m, err := conf.Parse(out)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(m["jetstream"]).To(HaveKeyWithValue("max_file_store", bytes), "FileStore %q", fileStore)
	}
}
