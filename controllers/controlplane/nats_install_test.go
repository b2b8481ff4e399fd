package controlplane_test

import (
	"encoding/base64"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// First install with NATS enabled with its defaults (three servers) and every Service a
// LoadBalancer whose address comes late: the exact Controller API call sequence, and what the
// operator stored, read back with the NATS libraries and the NATS server's configuration parser.
func TestNatsFirstInstall(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	g := h.g
	h.create(h.controlPlane(testfixture.WithNATS()))
	h.mustRequeue(controlplane.RequeueTransition)

	// No address anywhere. NATS bootstraps (the Controller answers) and stores what needs no
	// address, then waits for Service nats.
	h.mustRequeue(controlplane.RequeueLoadBalancer)
	g.Expect(h.api.Calls()).To(Equal([]string{"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/nats/bootstrap"}))
	g.Expect(h.get().Status.Nats.Reason).To(Equal(datasancev3.ReasonWaitingForLoadBalancer))
	g.Expect(h.get().Status.Nats.Enabled).To(BeTrue())
	for _, name := range []string{"nats-operator-seed", "nats-creds-sys-admin-hub", "nats-jetstream-key-iofog"} {
		g.Expect(h.exists(&corev1.Secret{}, name)).To(BeTrue(), name)
	}
	for _, name := range []string{"nats", "nats-server", "nats-headless"} {
		g.Expect(h.exists(&corev1.Service{}, name)).To(BeTrue(), name)
	}
	g.Expect(h.exists(&corev1.Secret{}, "nats-site-server")).To(BeFalse(), "server certificates need the address")
	g.Expect(h.exists(&corev1.ConfigMap{}, "iofog-nats-config")).To(BeFalse())

	// Addresses arrive: the router Deployment, the NATS StatefulSet and the Controller Deployment
	// are created; router and NATS wait for their rollouts, the Controller for its Deployment,
	// 5 s each (the router, first, decides the condition).
	h.setServiceAddress("router", routerLBIP)
	h.setServiceAddress("controller", h.controllerLB)
	h.setServiceAddress("nats", natsLBIP)
	h.mustRequeue(controlplane.RequeueDeploymentCreated)
	h.expectState(datasancev3.ConditionDeploying, datasancev3.ReasonWorkloadUnavailable)
	st := h.get().Status
	g.Expect(st.Nats.Ready).To(BeFalse())
	g.Expect(st.Nats.Reason).To(Equal(datasancev3.ReasonWorkloadUnavailable))
	g.Expect(st.Nats.Message).To(Equal("NATS is not available: StatefulSet nats is rolling out."))
	g.Expect(st.Controller.Reason).To(Equal(datasancev3.ReasonWaitingForDeployment))
	g.Expect(st.Nats.Address).To(Equal(natsLBIP))
	g.Expect(st.Nats.Replicas).To(Equal(int32(3)), "three servers by default")

	// The rollouts finish and the Controller answers: hub and the four CAs are registered →
	// ready. One Controller session per pass: the router's and NATS's CA lookups (before their
	// certificates, in the pass the addresses arrived) and the registration reuse the status
	// check and login of the pass. That pass created the JWT bundle last, from the Controller's
	// account list.
	h.finishRollouts()
	h.mustBeReady()
	bootstrap := []string{"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/nats/bootstrap"}
	want := append([]string(nil), bootstrap...)
	want = append(want,
		"GET /api/v3/status", "POST /api/v3/user/login",
		"GET /api/v3/certificates/ca/router-site-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/default-router-local-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/nats/bootstrap",
		"GET /api/v3/certificates/ca/nats-site-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/certificates/ca/default-nats-local-ca", "POST /api/v3/certificates/ca",
		"GET /api/v3/nats/accounts",
	)
	want = append(want, bootstrap...)
	want = append(want,
		"PUT /api/v3/router",
		"PUT /api/v3/nats/hub",
		"GET /api/v3/certificates/ca/router-site-ca",
		"GET /api/v3/certificates/ca/default-router-local-ca",
		"GET /api/v3/certificates/ca/nats-site-ca",
		"GET /api/v3/certificates/ca/default-nats-local-ca",
		"GET /api/v3/status",
	)
	g.Expect(h.api.Calls()).To(Equal(want))
	for _, r := range h.api.RequestsTo("GET", "/api/v3/nats/bootstrap") {
		g.Expect(r.Header.Get("Authorization")).To(HavePrefix("Bearer "), "the bootstrap is called logged in")
	}
	hub := h.api.RequestsTo("PUT", "/api/v3/nats/hub")
	g.Expect(hub).To(HaveLen(1))
	g.Expect(hub[0].Body).To(MatchJSON(`{"host":"` + natsLBIP + `","serverPort":4222,"clusterPort":6222,"leafPort":7422,"mqttPort":8883,"httpPort":8222}`))
	g.Expect(h.api.ImportedCAs()).To(ConsistOf("router-site-ca", "default-router-local-ca", "nats-site-ca", "default-nats-local-ca"))
	for _, r := range h.api.RequestsTo("POST", "/api/v3/certificates/ca")[2:] {
		g.Expect(r.Body).To(Or(
			MatchJSON(`{"name":"nats-site-ca","type":"k8s-secret","secretName":"nats-site-ca"}`),
			MatchJSON(`{"name":"default-nats-local-ca","type":"k8s-secret","secretName":"default-nats-local-ca"}`)))
	}

	// What was stored parses back with the NATS libraries.
	seed, err := nkeys.FromSeed(h.secret("nats-operator-seed").Data["seed"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(seed.PublicKey()).To(Equal(m.operatorPub))
	creds := h.secret("nats-creds-sys-admin-hub").Data["admin-hub.creds"]
	userJWT, err := jwt.ParseDecoratedJWT(creds)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(userJWT).To(Equal(m.userJWT))
	userClaims, err := jwt.DecodeUserClaims(userJWT)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(userClaims.Subject).To(Equal(m.userPub))
	userKey, err := nkeys.ParseDecoratedNKey(creds)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(userKey.PublicKey()).To(Equal(m.userPub))
	bundle := h.configMap("iofog-nats-jwt-bundle").Data
	g.Expect(bundle).To(Equal(map[string]string{m.accountPub + ".jwt": m.accountJWT}))
	g.Expect(h.configMap("iofog-nats-jwt-bundle").OwnerReferences).To(BeEmpty(), "kept with the JetStream data")
	accountClaims, err := jwt.DecodeAccountClaims(bundle[m.accountPub+".jwt"])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(accountClaims.Issuer).To(Equal(m.operatorPub))

	// JetStream key: 32 random bytes, base64.
	jsk := string(h.secret("nats-jetstream-key-iofog").Data["jsk"])
	raw, err := base64.StdEncoding.DecodeString(jsk)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(raw).To(HaveLen(32))

	// server.conf, read by the NATS server's own parser.
	sc := h.serverConf()
	g.Expect(sc).To(HaveKeyWithValue("operator", m.operatorJWT))
	g.Expect(sc).To(HaveKeyWithValue("system_account", m.accountPub))
	g.Expect(sc).To(HaveKeyWithValue("server_name", "nats-0"))
	operatorClaims, err := jwt.DecodeOperatorClaims(sc["operator"].(string))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(operatorClaims.SystemAccount).To(Equal(m.accountPub))
	js := sc["jetstream"].(map[string]any)
	g.Expect(js).To(HaveKeyWithValue("key", jsk))
	g.Expect(js).To(HaveKeyWithValue("domain", h.ns))
	g.Expect(js).To(HaveKeyWithValue("max_file_store", int64(10_000_000_000)))
	g.Expect(js).To(HaveKeyWithValue("max_memory_store", int64(1_000_000_000)))
	g.Expect(sc["cluster"]).To(HaveKeyWithValue("name", "iofog"))
	g.Expect(routes(sc)).To(Equal([]string{
		"nats://nats-0.nats-headless:6222", "nats://nats-1.nats-headless:6222", "nats://nats-2.nats-headless:6222",
	}))
	g.Expect(sc["leafnodes"]).To(HaveKeyWithValue("advertise", natsLBIP+":7422"))

	// TLS: two CAs, two server certificates with the replica annotation and the SANs.
	for _, ca := range []string{"nats-site-ca", "default-nats-local-ca"} {
		cert := h.certificate(ca)
		g.Expect(cert.IsCA).To(BeTrue())
		g.Expect(cert.Subject.CommonName).To(Equal(ca))
		g.Expect(h.secret(ca).Type).To(Equal(corev1.SecretTypeTLS))
	}
	for name, cn := range map[string]string{"nats-site-server": "iofog-nats", "nats-mqtt-server": "iofog-nats-mqtt"} {
		sec := h.secret(name)
		g.Expect(sec.Annotations).To(HaveKeyWithValue(controlplane.AnnotationNatsReplicas, "3"))
		cert := h.certificate(name)
		g.Expect(cert.Subject.CommonName).To(Equal(cn))
		g.Expect(cert.DNSNames).To(Equal(natsSANs(h.ns, 3, natsLBIP)))
		g.Expect(cert.IPAddresses).To(HaveLen(1))
		g.Expect(cert.IPAddresses[0].String()).To(Equal(natsLBIP))
	}
	g.Expect(h.certificate("nats-site-server").Issuer.CommonName).To(Equal("nats-site-ca"))
	g.Expect(h.certificate("nats-mqtt-server").Issuer.CommonName).To(Equal("default-nats-local-ca"))

	// Services (docs/controlplane.md#nats-objects, docs/controlplane.md#nats-ports) and RBAC.
	headless := h.service("nats-headless")
	g.Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(servicePorts(headless)).To(Equal(map[string]int32{"client": 4222, "cluster": 6222, "leaf": 7422, "mqtt": 8883, "monitor": 8222}))
	natsSvc := h.service("nats")
	g.Expect(natsSvc.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
	g.Expect(natsSvc.Spec.ExternalTrafficPolicy).To(Equal(corev1.ServiceExternalTrafficPolicyLocal))
	g.Expect(servicePorts(natsSvc)).To(Equal(map[string]int32{"cluster": 6222, "leaf": 7422, "mqtt": 8883}))
	server := h.service("nats-server")
	g.Expect(server.Spec.Type).To(Equal(corev1.ServiceTypeLoadBalancer))
	g.Expect(servicePorts(server)).To(Equal(map[string]int32{"client": 4222}), "the monitor stays in the cluster")
	// ServiceAccount nats, with no Role or RoleBinding: the NATS pods use no Kubernetes API
	// (docs/controlplane.md#operand-rbac; TestNatsServiceAccountReadsNothing checks the grants).
	g.Expect(h.exists(&rbacv1.Role{}, "nats")).To(BeFalse(), "Role nats")
	g.Expect(h.exists(&rbacv1.RoleBinding{}, "nats")).To(BeFalse(), "RoleBinding nats")
	g.Expect(h.exists(&corev1.ServiceAccount{}, "nats")).To(BeTrue())

	// StatefulSet, owned, with the storage template.
	sts := h.statefulSet()
	g.Expect(*sts.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(sts.OwnerReferences).To(HaveLen(1))
	g.Expect(sts.OwnerReferences[0].Name).To(Equal(cpName))
	g.Expect(sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]).To(Equal(resource.MustParse("10Gi")))
	g.Expect(sts.Spec.Template.Annotations).NotTo(HaveKey(controlplane.AnnotationRestartedAt))
	g.Expect(sts.Spec.Template.Spec.ServiceAccountName).To(Equal("nats"))
	g.Expect(sts.Spec.Template.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()), "the NATS pods mount no API token")
	g.Expect(envOf(h.deployment("controller").Spec.Template.Spec.Containers[0])).To(HaveKeyWithValue("NATS_ENABLED", "true"))
}

// servicePorts maps a Service's port names to ports.
func servicePorts(svc *corev1.Service) map[string]int32 {
	out := map[string]int32{}
	for _, p := range svc.Spec.Ports {
		out[p.Name] = p.Port
	}
	return out
}

// A pass over a ready ControlPlane with NATS writes nothing and calls nothing: the bootstrap
// stored earlier is reused, and every NATS object compares equal.
func TestNatsReadyPassWritesNothing(t *testing.T) {
	t.Parallel()
	h, _ := newNatsHarness(t)
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	g := h.g
	before := h.configMap("iofog-nats-config").ResourceVersion
	sts := h.statefulSet().ResourceVersion
	h.api.Reset()
	h.writes.Store(0)

	h.mustBeReady()
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeZero(), "no create/update/patch/apply/delete")
	g.Expect(h.api.Calls()).To(BeEmpty(), "no Controller API call while ready")
	g.Expect(h.configMap("iofog-nats-config").ResourceVersion).To(Equal(before))
	g.Expect(h.statefulSet().ResourceVersion).To(Equal(sts))
}

// While ready, a deleted bootstrap Secret is restored: the stored material is incomplete, so the
// Controller is asked again (and only the bootstrap is called).
func TestNatsReadyRestoresBootstrapSecret(t *testing.T) {
	t.Parallel()
	h, m := newNatsHarness(t)
	g := h.g
	h.bringUpNats(h.controlPlane(testfixture.WithNATS()))
	g.Expect(env.Client.Delete(h.ctx, h.secret("nats-operator-seed"))).To(Succeed())
	h.api.Reset()

	h.mustBeReady()
	g.Expect(h.api.Calls()).To(Equal([]string{"GET /api/v3/status", "POST /api/v3/user/login", "GET /api/v3/nats/bootstrap"}))
	g.Expect(string(h.secret("nats-operator-seed").Data["seed"])).To(Equal(m.bootstrap.OperatorSeed))
}
