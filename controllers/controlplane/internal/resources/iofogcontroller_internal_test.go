package resources

import (
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// testImages are the operand images of the unit tests.
var testImages = Images{Controller: testfixture.ControllerImage, Router: testfixture.RouterImage, Nats: testfixture.NatsImage}

// envList renders env as "NAME=value" or "NAME<-secret/key", in order.
func envList(env []*corev1ac.EnvVarApplyConfiguration) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			out = append(out, *e.Name+"<-"+*e.ValueFrom.SecretKeyRef.Name+"/"+*e.ValueFrom.SecretKeyRef.Key)
		default:
			out = append(out, *e.Name+"="+ptr.Deref(e.Value, ""))
		}
	}
	return out
}

// ptrs returns pointers to the elements of s.
func ptrs[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// The complete CR → env table of docs/controlplane.md#controller-environment for a fully configured ControlPlane.
func TestControllerEnvFull(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		s := &cp.Spec
		s.Auth.InsecureAllowHTTP = ptr.To(true)
		s.Auth.InsecureAllowBootstrapLog = ptr.To(false)
		s.Auth.ConsoleClient = "ecn-viewer"
		s.Auth.ConsoleClientEnabled = ptr.To(true)
		s.Auth.RateLimit = &datasancev3.RateLimit{Enabled: ptr.To(true), MaxRequestsPerWindow: ptr.To[int32](60), WindowMs: ptr.To[int32](60000)}
		s.Auth.SessionStore = &datasancev3.SessionStore{Type: "database", TTLMs: ptr.To[int32](1000), Secret: "s3ssion"}
		s.Auth.TokenTTL = &datasancev3.TokenTTL{AccessTokenTTLSeconds: ptr.To[int32](900), RefreshTokenTTLSeconds: ptr.To[int32](3600)}
		s.Auth.OIDCTTL = &datasancev3.OIDCTTL{InteractionTTLSeconds: ptr.To[int32](1), GrantTTLSeconds: ptr.To[int32](2),
			SessionTTLSeconds: ptr.To[int32](3), IDTokenTTLSeconds: ptr.To[int32](4)}
		s.Events = datasancev3.Events{AuditEnabled: ptr.To(true), RetentionDays: 7, CleanupInterval: 3600, CaptureIPAddress: ptr.To(false)}
		s.Vault = &datasancev3.Vault{Provider: "openbao", BasePath: "iofog/$namespace/x", Hashicorp: &datasancev3.VaultHashicorp{Address: "a", Token: "t", Mount: "m"}}
		s.Controller = datasancev3.ControllerSpec{Ecn: "ecn", PidBaseDir: "/pid", LogLevel: "debug", ConsolePort: 9000,
			HTTPS: ptr.To(true), SecretName: "tls", TrustProxy: ptr.To(false)}
	})
	urls := ControllerURLs{PublicURL: "https://p", ConsoleURL: "https://c", trustProxy: ptr.To(false)}
	g.Expect(envList(controllerEnv(cp, testImages, urls))).To(Equal([]string{
		"CONTROL_PLANE=Kubernetes", "CONTROLLER_NAME=iofog", "CONTROLLER_NAMESPACE=edge", "DB_PROVIDER=postgres",
		"ROUTER_IMAGE_1=r:1", "ROUTER_IMAGE_2=r:1", "ROUTER_IMAGE_3=r:1", "ROUTER_IMAGE_4=r:1",
		"NATS_ENABLED=true", "NATS_IMAGE_1=n:1", "NATS_IMAGE_2=n:1", "NATS_IMAGE_3=n:1", "NATS_IMAGE_4=n:1",
		"ECN_NAME=ecn", "PID_BASE=/pid", "LOG_LEVEL=debug",
		"CONTROLLER_PUBLIC_URL=https://p", "CONSOLE_URL=https://c", "CONSOLE_PORT=9000", "TRUST_PROXY=false",
		"AUTH_INSECURE_ALLOW_HTTP=true", "AUTH_INSECURE_ALLOW_BOOTSTRAP_LOG=false",
		"OIDC_CONSOLE_CLIENT_ID=ecn-viewer", "AUTH_CONSOLE_CLIENT_ENABLED=true",
		"AUTH_RATE_LIMIT_ENABLED=true", "AUTH_RATE_LIMIT_MAX_REQUESTS=60", "AUTH_RATE_LIMIT_WINDOW_MS=60000",
		"AUTH_SESSION_STORE_TYPE=database", "AUTH_SESSION_STORE_TTL_MS=1000",
		"AUTH_ACCESS_TOKEN_TTL_SECONDS=900", "AUTH_REFRESH_TOKEN_TTL_SECONDS=3600",
		"AUTH_OIDC_INTERACTION_TTL_SECONDS=1", "AUTH_OIDC_GRANT_TTL_SECONDS=2",
		"AUTH_OIDC_SESSION_TTL_SECONDS=3", "AUTH_OIDC_ID_TOKEN_TTL_SECONDS=4",
		"EVENT_AUDIT_ENABLED=true", "EVENT_RETENTION_DAYS=7", "EVENT_CLEANUP_INTERVAL=3600", "EVENT_CAPTURE_IP_ADDRESS=false",
		"VAULT_ENABLED=true", "VAULT_PROVIDER=openbao", "VAULT_BASE_PATH=iofog/edge/x",
		"SERVER_DEV_MODE=false", "TLS_PATH_CERT=/etc/iofog/controller-cert/tls.crt",
		"TLS_PATH_KEY=/etc/iofog/controller-cert/tls.key", "TLS_PATH_INTERMEDIATE_CERT=/etc/iofog/controller-cert/ca.crt",
		"DB_NAME<-controller-db-credentials/dbname", "DB_HOST<-controller-db-credentials/host",
		"DB_PORT<-controller-db-credentials/port", "DB_USERNAME<-controller-db-credentials/username",
		"DB_PASSWORD<-controller-db-credentials/password", "DB_USE_SSL<-controller-db-credentials/ssl",
		"DB_SSL_CA_B64<-controller-db-credentials/ca",
		"AUTH_MODE<-controller-auth-credentials/auth-mode",
		"OIDC_BOOTSTRAP_ADMIN_USERNAME<-controller-auth-credentials/auth-bootstrap-username",
		"OIDC_BOOTSTRAP_ADMIN_PASSWORD<-controller-auth-credentials/auth-bootstrap-password",
		"OIDC_ISSUER_URL<-controller-auth-credentials/auth-issuer-url",
		"OIDC_CLIENT_ID<-controller-auth-credentials/auth-client-id",
		"OIDC_CLIENT_SECRET<-controller-auth-credentials/auth-client-secret",
		"AUTH_SESSION_SECRET<-controller-auth-credentials/auth-session-secret",
		"VAULT_HASHICORP_ADDRESS<-controller-vault-credentials/address",
		"VAULT_HASHICORP_TOKEN<-controller-vault-credentials/token",
		"VAULT_HASHICORP_MOUNT<-controller-vault-credentials/mount",
	}))
	for _, e := range envList(controllerEnv(cp, testImages, urls)) {
		g.Expect(e).NotTo(ContainSubstring("s3ssion"), "secrets only through secretKeyRef")
		g.Expect(e).NotTo(ContainSubstring("=pw"))
	}
}

// A minimal ControlPlane gets the defaults and none of the optional variables.
func TestControllerEnvMinimal(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane(testfixture.WithoutNATS())
	env := envList(controllerEnv(cp, testImages, ControllerURLs{PublicURL: "http://p", ConsoleURL: "http://p"}))
	g.Expect(env).To(ContainElements("NATS_ENABLED=false", "PID_BASE=/home/runner", "LOG_LEVEL=info", "CONSOLE_PORT=8008", "ECN_NAME="))
	for _, e := range env {
		for _, prefix := range []string{"NATS_IMAGE_", "TRUST_PROXY", "EVENT_", "VAULT_", "AUTH_RATE", "AUTH_SESSION", "TLS_PATH", "SERVER_DEV_MODE", "OIDC_CONSOLE"} {
			g.Expect(e).NotTo(HavePrefix(prefix))
		}
	}
}

func TestEventsEnv(t *testing.T) {
	cases := []struct {
		name   string
		events datasancev3.Events
		want   []string
	}{
		{"inactive", datasancev3.Events{}, []string{}},
		// Unset, the Controller's own default (audit on) stays in force: the flag is not written.
		{"only capture", datasancev3.Events{CaptureIPAddress: ptr.To(true)}, []string{"EVENT_CAPTURE_IP_ADDRESS=true"}},
		{"only retention keeps auditing on", datasancev3.Events{RetentionDays: 3}, []string{"EVENT_RETENTION_DAYS=3"}},
		{"retention and cleanup with audit unset", datasancev3.Events{RetentionDays: 3, CleanupInterval: 60},
			[]string{"EVENT_RETENTION_DAYS=3", "EVENT_CLEANUP_INTERVAL=60"}},
		{"audit zero values", datasancev3.Events{AuditEnabled: ptr.To(true)}, []string{"EVENT_AUDIT_ENABLED=true"}},
		{"audit off drops retention and cleanup", datasancev3.Events{AuditEnabled: ptr.To(false), RetentionDays: 3, CleanupInterval: 60},
			[]string{"EVENT_AUDIT_ENABLED=false"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(envList(eventsEnv(&tc.events))).To(Equal(tc.want))
		})
	}
}

// On SQLite the Controller keeps its database where the PVC is mounted: SQLITE_STORAGE_DIR names
// exactly the mount path of the controller-sqlite claim, a path of the operator's own and not a
// package directory of any image release (3.7: @datasance/iofogcontroller, 3.8+: controller).
// An external database gets neither the variable nor the volume.
func TestSQLiteDatabaseIsOnItsVolume(t *testing.T) {
	g := NewWithT(t)
	sqlite := ControllerDeployment(testfixture.ControlPlane(testfixture.WithSQLite()),
		testImages, ControllerURLs{}, ControllerPodHashes{})
	pod := sqlite.Spec.Template.Spec
	c := pod.Containers[0]
	var claimVolume string
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil && *v.PersistentVolumeClaim.ClaimName == sqlitePVCName {
			claimVolume = *v.Name
		}
	}
	g.Expect(claimVolume).NotTo(BeEmpty(), "the pod mounts PVC %s", sqlitePVCName)
	var mountPath string
	for _, m := range c.VolumeMounts {
		if *m.Name == claimVolume {
			mountPath = *m.MountPath
		}
	}
	g.Expect(envList(ptrs(c.Env))).To(ContainElement("SQLITE_STORAGE_DIR="+mountPath), "the database is where the claim is mounted")
	g.Expect(mountPath).NotTo(ContainSubstring("node_modules"), "not tied to where an image release installs its package")
	g.Expect(mountPath).To(Equal("/var/lib/controller/sqlite"))

	external := ControllerDeployment(testfixture.ControlPlane(), testImages, ControllerURLs{}, ControllerPodHashes{}).Spec.Template.Spec
	g.Expect(external.Volumes).To(BeEmpty())
	for _, e := range envList(ptrs(external.Containers[0].Env)) {
		g.Expect(e).NotTo(HavePrefix("SQLITE_STORAGE_DIR"))
	}
}

// The liveness probe is set for Controller images that serve GET /api/v3/live (3.8.2 and
// later, by tag) and only for them; over https it is a curl inside the pod, like readiness.
func TestControllerLivenessProbe(t *testing.T) {
	for image, want := range map[string]bool{
		"ghcr.io/datasance/controller:3.9.0":                                     true,
		"ghcr.io/datasance/controller:3.8.2":                                     true,
		"ghcr.io/datasance/controller:v3.10.1":                                   true,
		"registry.local:5000/controller:3.8.3@sha256:" + strings.Repeat("a", 64): true,
		"ghcr.io/datasance/controller:4.0.0-rc.1":                                true,
		"ghcr.io/datasance/controller:3.8.2-rc.1":                                false,
		"ghcr.io/datasance/controller:3.8.1":                                     false,
		"ghcr.io/datasance/controller:3.7.3":                                     false,
		"ghcr.io/datasance/controller:latest":                                    false,
		"ghcr.io/datasance/controller":                                           false,
		"registry.local:5000/controller":                                         false,
		"ghcr.io/datasance/controller@sha256:" + strings.Repeat("a", 64):         false,
		"ghcr.io/datasance/controller:3.9":                                       false,
	} {
		if got := ControllerServesLiveness(image); got != want {
			t.Errorf("ControllerServesLiveness(%q) = %t, want %t", image, got, want)
		}
	}

	g := NewWithT(t)
	images := testImages
	images.Controller = "ghcr.io/datasance/controller:3.9.0"
	live := ControllerDeployment(testfixture.ControlPlane(), images, ControllerURLs{}, ControllerPodHashes{}).Spec.Template.Spec.Containers[0].LivenessProbe
	g.Expect(live).NotTo(BeNil())
	g.Expect(*live.HTTPGet.Path).To(Equal("/api/v3/live"))
	g.Expect(live.HTTPGet.Port.IntValue()).To(Equal(ControllerAPIPort))
	g.Expect(*live.FailureThreshold**live.PeriodSeconds).To(BeEquivalentTo(120), "two minutes without an answer")

	https := ControllerDeployment(testfixture.ControlPlane(testfixture.WithHTTPS("tls")), images, ControllerURLs{}, ControllerPodHashes{}).Spec.Template.Spec.Containers[0].LivenessProbe
	g.Expect(https.Exec.Command).To(Equal([]string{"curl", "-sfk", "https://127.0.0.1:51121/api/v3/live"}))

	g.Expect(ControllerDeployment(testfixture.ControlPlane(), testImages, ControllerURLs{}, ControllerPodHashes{}).Spec.Template.Spec.Containers[0].LivenessProbe).
		To(BeNil(), "image c:1 is no release that serves /api/v3/live")
}

func TestVault(t *testing.T) {
	g := NewWithT(t)
	g.Expect(vaultActive(nil)).To(BeFalse())
	g.Expect(vaultActive(&datasancev3.Vault{BasePath: "x"})).To(BeFalse())
	g.Expect(vaultActive(&datasancev3.Vault{Provider: "aws"})).To(BeTrue())

	// The first block in the order hashicorp, aws, azure, google wins; the provider is inferred.
	v := &datasancev3.Vault{Enabled: ptr.To(false), AWS: &datasancev3.VaultAWS{Region: "eu", AccessKeyID: "id", AccessKey: "key"},
		Google: &datasancev3.VaultGoogle{ProjectID: "p"}}
	cp := testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) { cp.Spec.Vault = v })
	g.Expect(envList(vaultEnv(cp))).To(Equal([]string{"VAULT_ENABLED=false", "VAULT_PROVIDER=aws"}))
	g.Expect(vaultSecretData(v)).To(Equal(map[string][]byte{"region": []byte("eu"), "accessKeyId": []byte("id"), "accessKey": []byte("key")}))
	g.Expect(ControllerCredentials(&cp.Spec, "")).To(HaveKey(VaultSecretName))
	cp.Spec.Vault = nil
	g.Expect(ControllerCredentials(&cp.Spec, "")).NotTo(HaveKey(VaultSecretName))
}

// URL resolution, docs/controlplane.md#url-resolution.
func TestResolveControllerURLs(t *testing.T) {
	ingress := func(secret string) testfixture.Mod {
		return testfixture.WithControllerIngress(datasancev3.ControllerIngress{Host: "cp.example.com", SecretName: secret})
	}
	https := testfixture.WithHTTPS("") // the URLs need no Secret name
	cases := []struct {
		name       string
		cp         *datasancev3.ControlPlane
		lb         string
		want       ControllerURLs
		wantToWait bool
	}{
		{"LB without address waits", testfixture.ControlPlane(), "", ControllerURLs{}, true},
		{"LB http", testfixture.ControlPlane(), "10.0.0.1", ControllerURLs{PublicURL: "http://10.0.0.1:51121", ConsoleURL: "http://10.0.0.1"}, false},
		{"LB https hostname", testfixture.ControlPlane(https), "lb.example.com", ControllerURLs{PublicURL: "https://lb.example.com:51121", ConsoleURL: "https://lb.example.com"}, false},
		{"LB IPv6", testfixture.ControlPlane(), "2001:db8::1", ControllerURLs{PublicURL: "http://[2001:db8::1]:51121", ConsoleURL: "http://[2001:db8::1]"}, false},
		{"explicit publicUrl never waits", testfixture.ControlPlane(testfixture.WithPublicURL("https://x")), "",
			ControllerURLs{PublicURL: "https://x", ConsoleURL: "https://x"}, false},
		{"explicit consoleUrl kept", testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.ConsoleURL = "https://console" }), "1.2.3.4",
			ControllerURLs{PublicURL: "http://1.2.3.4:51121", ConsoleURL: "https://console"}, false},
		{"ingress http", testfixture.ControlPlane(ingress("")), "", ControllerURLs{PublicURL: "http://cp.example.com", ConsoleURL: "http://cp.example.com", trustProxy: ptr.To(true)}, false},
		{"ingress TLS secret", testfixture.ControlPlane(ingress("tls")), "", ControllerURLs{PublicURL: "https://cp.example.com", ConsoleURL: "https://cp.example.com", trustProxy: ptr.To(true)}, false},
		{"ingress https pod", testfixture.ControlPlane(ingress(""), https), "", ControllerURLs{PublicURL: "https://cp.example.com", ConsoleURL: "https://cp.example.com", trustProxy: ptr.To(true)}, false},
		{"ingress trustProxy false kept", testfixture.ControlPlane(ingress(""), func(cp *datasancev3.ControlPlane) { cp.Spec.Controller.TrustProxy = ptr.To(false) }), "",
			ControllerURLs{PublicURL: "http://cp.example.com", ConsoleURL: "http://cp.example.com", trustProxy: ptr.To(false)}, false},
		{"NodePort derives nothing", testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
			cp.Spec.Services.Controller = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeNodePort}
			cp.Spec.Controller.PublicURL = "http://node:30000"
		}), "", ControllerURLs{PublicURL: "http://node:30000", ConsoleURL: "http://node:30000"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, wait := ResolveControllerURLs(&tc.cp.Spec, tc.lb)
			g.Expect(wait).To(Equal(tc.wantToWait))
			if !wait {
				g.Expect(got).To(Equal(tc.want))
			}
		})
	}
}

// externalTrafficPolicy: only LoadBalancer (default Local) and NodePort (default Cluster).
func TestServiceExposure(t *testing.T) {
	cases := []struct {
		block      *datasancev3.ServiceSpec
		wantType   corev1.ServiceType
		wantPolicy corev1.ServiceExternalTrafficPolicy
	}{
		{nil, corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyLocal},
		{&datasancev3.ServiceSpec{ExternalTrafficPolicy: "Cluster"}, corev1.ServiceTypeLoadBalancer, corev1.ServiceExternalTrafficPolicyCluster},
		{&datasancev3.ServiceSpec{Type: corev1.ServiceTypeNodePort}, corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyCluster},
		{&datasancev3.ServiceSpec{Type: corev1.ServiceTypeNodePort, ExternalTrafficPolicy: "Local"}, corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyLocal},
		{&datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ExternalTrafficPolicy: "Local"}, corev1.ServiceTypeClusterIP, ""},
	}
	for _, tc := range cases {
		g := NewWithT(t)
		svc := RouterService(testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) { cp.Spec.Services.Router = tc.block }))
		g.Expect(*svc.Spec.Type).To(Equal(tc.wantType))
		g.Expect(ptr.Deref(svc.Spec.ExternalTrafficPolicy, "")).To(Equal(tc.wantPolicy))
	}
}

func TestControllerService(t *testing.T) {
	g := NewWithT(t)
	svc := ControllerService(testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Controller.ConsolePort = 9000
		cp.Spec.Services.Controller = &datasancev3.ServiceSpec{Address: "10.1.1.1", Annotations: map[string]string{"a": "b"}}
	}))
	g.Expect(ptr.Deref(svc.Spec.LoadBalancerIP, "")).To(Equal("10.1.1.1"))
	g.Expect(svc.Annotations).To(Equal(map[string]string{"a": "b"}))
	g.Expect(svc.Spec.Ports[1].TargetPort.IntValue()).To(Equal(9000))
	g.Expect(*svc.Spec.Ports[1].Port).To(Equal(int32(80)))

	clusterIP := ControllerService(testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Services.Controller = &datasancev3.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Address: "10.1.1.1"}
	}))
	g.Expect(clusterIP.Spec.LoadBalancerIP).To(BeNil(), "address is for LoadBalancers only")
}

// Without secretName or class, the Ingress has no TLS block and no class (docs/controlplane.md#ingress-tls-block).
func TestControllerIngressMinimal(t *testing.T) {
	g := NewWithT(t)
	ing := ControllerIngress(testfixture.ControlPlane(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Ingresses.Controller = &datasancev3.ControllerIngress{Host: "h"}
	}))
	g.Expect(ing.Spec.TLS).To(BeEmpty())
	g.Expect(ing.Spec.IngressClassName).To(BeNil())
	g.Expect(ing.Annotations).To(BeNil())
}

// In embedded auth mode the Controller serves its own OIDC issuer under /oidc on the API port, so
// the Ingress routes it there; with an external issuer nothing is served under /oidc
// (docs/controlplane.md#controller-ingress).
func TestControllerIngressRoutesTheEmbeddedIssuer(t *testing.T) {
	g := NewWithT(t)
	backends := func(cp *datasancev3.ControlPlane) map[string]string {
		got := map[string]string{}
		for _, p := range ControllerIngress(cp).Spec.Rules[0].HTTP.Paths {
			g.Expect(*p.PathType).To(Equal(networkingv1.PathTypePrefix))
			got[*p.Path] = *p.Backend.Service.Port.Name
		}
		return got
	}
	withIngress := func(cp *datasancev3.ControlPlane) {
		cp.Spec.Ingresses.Controller = &datasancev3.ControllerIngress{Host: "h"}
	}
	g.Expect(backends(testfixture.ControlPlane(withIngress))).To(Equal(map[string]string{
		"/": consolePortName, "/api/v3": controllerAPIPortName, "/oidc": controllerAPIPortName,
	}))
	g.Expect(backends(testfixture.ControlPlane(withIngress, func(cp *datasancev3.ControlPlane) {
		cp.Spec.Auth = datasancev3.Auth{Mode: datasancev3.AuthModeExternal, IssuerURL: "https://idp.example.com"}
	}))).To(Equal(map[string]string{"/": consolePortName, "/api/v3": controllerAPIPortName}))
}

// PUT /router payload, docs/controlplane.md#router-registration and docs/controlplane.md#router-ingress-ports-of-0.

func TestDBSecretData(t *testing.T) {
	g := NewWithT(t)
	ca := "Q0E="
	g.Expect(dbSecretData(&datasancev3.Database{Host: "h", Port: 3306, SSL: ptr.To(true), CA: &ca})).To(Equal(map[string][]byte{
		"dbname": {}, "host": []byte("h"), "port": []byte("3306"), "username": {}, "password": {}, "ssl": []byte("true"), "ca": []byte(ca),
	}))
}

// Hashes are stable, change with any byte of data, and do not collide on concatenation.
func TestHashData(t *testing.T) {
	g := NewWithT(t)
	a := HashData(map[string]map[string][]byte{"s": {"k": []byte("v")}})
	g.Expect(HashData(map[string]map[string][]byte{"s": {"k": []byte("v")}})).To(Equal(a))
	g.Expect(HashData(map[string]map[string][]byte{"s": {"k": []byte("w")}})).NotTo(Equal(a))
	g.Expect(HashData(map[string]map[string][]byte{"s": {"kv": []byte("")}})).NotTo(Equal(HashData(map[string]map[string][]byte{"s": {"k": []byte("v")}})))
}

// Operand port names must stay within the 15 characters Kubernetes allows.
func TestPortNames(t *testing.T) {
	g := NewWithT(t)
	cp := testfixture.ControlPlane()
	for _, p := range append(ControllerService(cp).Spec.Ports, RouterService(cp).Spec.Ports...) {
		g.Expect(len(*p.Name)).To(BeNumerically("<=", 15), *p.Name)
	}
	for _, c := range RouterDeployment(cp, "r", "h").Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			g.Expect(len(*p.Name)).To(BeNumerically("<=", 15), *p.Name)
			g.Expect(strings.ToLower(*p.Name)).To(Equal(*p.Name))
		}
	}
}

// Deployment router (docs/controlplane.md#router-deployment): one replica, the command, env, ports, probes and the mounts of
// the two server Secrets and skrouterd.json.
func TestRouterDeployment(t *testing.T) {
	g := NewWithT(t)
	d := RouterDeployment(testfixture.ControlPlane(), "r:1", "h1")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(1)))
	tmpl := d.Spec.Template
	g.Expect(tmpl.Labels).To(HaveKeyWithValue("application", "interior-router"))
	g.Expect(tmpl.Labels).To(HaveKeyWithValue("skupper.io/component", "router"))
	g.Expect(tmpl.Labels).To(HaveKeyWithValue("skupper.io/type", "site"))
	g.Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{
		"app.kubernetes.io/name": "iofog", "app.kubernetes.io/instance": "iofog", "app.kubernetes.io/component": "router",
	}))
	g.Expect(tmpl.Annotations).To(Equal(map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090", AnnotationTLSHash: "h1"}))
	g.Expect(*tmpl.Spec.ServiceAccountName).To(Equal("router"))
	c := tmpl.Spec.Containers[0]
	g.Expect(c.Command).To(Equal([]string{"/home/skrouterd/bin/router"}))
	g.Expect(*c.Image).To(Equal("r:1"))
	env := make([]*corev1ac.EnvVarApplyConfiguration, len(c.Env))
	for i := range c.Env {
		env[i] = &c.Env[i]
	}
	g.Expect(envList(env)).To(Equal([]string{
		"APPLICATION_NAME=router", "QDROUTERD_AUTO_MESH_DISCOVERY=QUERY", "QDROUTERD_CONF=/tmp/skrouterd.json",
		"QDROUTERD_CONF_TYPE=json", "SSL_PROFILE_PATH=/etc/skupper-router-certs", "SKUPPER_SITE_ID=default-router",
		"SKUPPER_PLATFORM=kubernetes", "POD_NAMESPACE=", "POD_IP=",
	}))
	g.Expect(*c.Env[7].ValueFrom.FieldRef.FieldPath).To(Equal("metadata.namespace"))
	g.Expect(*c.Env[8].ValueFrom.FieldRef.FieldPath).To(Equal("status.podIP"))
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, *p.Name+":"+strconv.Itoa(int(*p.ContainerPort)))
	}
	g.Expect(ports).To(Equal([]string{"amqps:5671", "http:9090", "inter-router:55671", "edge:45671"}))
	g.Expect(*c.ReadinessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(*c.LivenessProbe.InitialDelaySeconds).To(Equal(int32(60)))
	var mounts []string
	for _, m := range c.VolumeMounts {
		mounts = append(mounts, *m.Name+"@"+*m.MountPath)
	}
	g.Expect(mounts).To(Equal([]string{
		"router-site-server@/etc/skupper-router-certs/router-site-server",
		"router-local-server@/etc/skupper-router-certs/router-local-server",
		"router-config@/tmp",
	}))
	g.Expect(*tmpl.Spec.Volumes[2].ConfigMap.Name).To(Equal("iofog-router"))
	g.Expect(*tmpl.Spec.Volumes[2].ConfigMap.Items[0].Key).To(Equal("skrouterd.json"))
}

// Leaf certificates: CNs and SANs of docs/controlplane.md#router-tls-secrets.
func TestRouterCertificateSpecs(t *testing.T) {
	g := NewWithT(t)
	specs := RouterCertificates("edge", "203.0.113.5")
	g.Expect(specs).To(Equal([]TLSSecretSpec{
		{Name: "router-site-ca", CommonName: "router-site-ca"},
		{Name: "default-router-local-ca", CommonName: "default-router-local-ca"},
		{Name: "router-site-server", CommonName: "iofog-router", CAName: "router-site-ca", Hosts: []string{"router.edge.svc.cluster.local", "203.0.113.5"}},
		{Name: "router-local-server", CommonName: "iofog-router-local", CAName: "default-router-local-ca", Hosts: []string{"router.edge.svc.cluster.local", "203.0.113.5"}},
	}))
}
