package controlplane_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/conf"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
)

// natsLBIP is the address the tests "assign" to LoadBalancer Service nats.
const natsLBIP = "192.0.2.40"

// natsClock is the reconciler's clock in the NATS tests (restartedAt).
var natsClock = time.Date(2026, 11, 29, 15, 4, 5, 0, time.UTC)

// natsMaterial is real NATS bootstrap material made with nats-io/jwt and nkeys, and the keys
// behind it, so that what the operator stores can be checked against them.
type natsMaterial struct {
	bootstrap                        iofog.NatsBootstrap
	operatorPub, accountPub, userPub string
	operatorJWT, accountJWT, userJWT string
	userSeed                         []byte
}

func newNatsMaterial(t *testing.T) natsMaterial {
	t.Helper()
	g := NewWithT(t)
	must := func(s string, err error) string {
		t.Helper()
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}
	operator, err := nkeys.CreateOperator()
	g.Expect(err).NotTo(HaveOccurred())
	account, err := nkeys.CreateAccount()
	g.Expect(err).NotTo(HaveOccurred())
	user, err := nkeys.CreateUser()
	g.Expect(err).NotTo(HaveOccurred())
	m := natsMaterial{
		operatorPub: must(operator.PublicKey()),
		accountPub:  must(account.PublicKey()),
		userPub:     must(user.PublicKey()),
	}

	oc := jwt.NewOperatorClaims(m.operatorPub)
	oc.Name = "iofog"
	oc.SystemAccount = m.accountPub
	m.operatorJWT = must(oc.Encode(operator))
	ac := jwt.NewAccountClaims(m.accountPub)
	ac.Name = "SYS"
	m.accountJWT = must(ac.Encode(operator))
	uc := jwt.NewUserClaims(m.userPub)
	uc.Name = "sys-admin-hub"
	m.userJWT = must(uc.Encode(account))

	m.userSeed, err = user.Seed()
	g.Expect(err).NotTo(HaveOccurred())
	creds, err := jwt.FormatUserConfig(m.userJWT, m.userSeed)
	g.Expect(err).NotTo(HaveOccurred())
	operatorSeed, err := operator.Seed()
	g.Expect(err).NotTo(HaveOccurred())
	m.bootstrap = iofog.NatsBootstrap{
		OperatorJwt:            m.operatorJWT,
		OperatorPublicKey:      m.operatorPub,
		OperatorSeed:           string(operatorSeed),
		SystemAccountJwt:       m.accountJWT,
		SystemAccountPublicKey: m.accountPub,
		SysUserCredsBase64:     base64.StdEncoding.EncodeToString(creds),
	}
	return m
}

// newNatsHarness is a harness whose fake Controller answers the bootstrap with real material,
// and whose reconciler runs on natsClock.
func newNatsHarness(t *testing.T) (*harness, natsMaterial) {
	t.Helper()
	h := newHarness(t)
	m := newNatsMaterial(t)
	h.api.SetBootstrap(m.bootstrap)
	h.clock.SetTime(natsClock)
	return h, m
}

// bringUpNats is bringUp that also plays the cloud for Service nats.
func (h *harness) bringUpNats(cp *datasancev3.ControlPlane) {
	h.t.Helper()
	h.create(cp)
	for range 8 {
		h.assignAddresses()
		h.assignNatsAddress()
		res, err := h.reconcile()
		h.g.Expect(err).NotTo(HaveOccurred())
		if isReadyResult(res) {
			h.expectState(datasancev3.ConditionReady, datasancev3.ReasonReconciled)
			return
		}
	}
	h.t.Fatalf("ControlPlane not ready after 8 passes: %+v", h.get().Status)
}

// assignNatsAddress gives LoadBalancer Service nats an address if it has none.
func (h *harness) assignNatsAddress() {
	svc := &corev1.Service{}
	if h.exists(svc, "nats") && svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
		h.setServiceAddress("nats", natsLBIP)
	}
}

func (h *harness) configMap(name string) *corev1.ConfigMap {
	h.t.Helper()
	cm := &corev1.ConfigMap{}
	h.g.Expect(env.Client.Get(h.ctx, h.key(name), cm)).To(Succeed())
	return cm
}

func (h *harness) statefulSet() *appsv1.StatefulSet {
	h.t.Helper()
	sts := &appsv1.StatefulSet{}
	h.g.Expect(env.Client.Get(h.ctx, h.key("nats"), sts)).To(Succeed())
	return sts
}

func (h *harness) service(name string) *corev1.Service {
	h.t.Helper()
	svc := &corev1.Service{}
	h.g.Expect(env.Client.Get(h.ctx, h.key(name), svc)).To(Succeed())
	return svc
}

// serverConf reads server.conf of ConfigMap iofog-nats-config with the NATS server's own
// parser, as pod nats-0 would: the variables the pod's environment resolves are defined at the
// top of the file instead (the parser looks a variable up in the file before the environment), so
// that parallel tests need no process environment: $SELFNAME as "nats-0" and $JETSTREAM_KEY as
// the key of the Secret the StatefulSet's container takes it from. The definitions are not part
// of the returned map.
func (h *harness) serverConf() map[string]any {
	h.t.Helper()
	sts := &appsv1.StatefulSet{}
	h.g.Expect(env.Client.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: "nats"}, sts)).To(Succeed())
	var key *corev1.SecretKeySelector
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "JETSTREAM_KEY" && e.ValueFrom != nil {
			key = e.ValueFrom.SecretKeyRef
		}
	}
	h.g.Expect(key).NotTo(BeNil(), "JETSTREAM_KEY comes from a Secret")
	defs := fmt.Sprintf("SELFNAME: \"nats-0\"\nJETSTREAM_KEY: %q\n", h.secret(key.Name).Data[key.Key])
	m, err := conf.Parse(defs + h.configMap("iofog-nats-config").Data["server.conf"])
	h.g.Expect(err).NotTo(HaveOccurred())
	h.g.Expect(m).To(HaveKeyWithValue("server_name", "nats-0"), "$SELFNAME resolved")
	delete(m, "SELFNAME")
	delete(m, "JETSTREAM_KEY")
	return m
}

// routes returns cluster.routes of a parsed server.conf.
func routes(m map[string]any) []string {
	cluster, _ := m["cluster"].(map[string]any)
	var out []string
	for _, r := range cluster["routes"].([]any) {
		out = append(out, r.(string))
	}
	return out
}

// certificate parses tls.crt of Secret name.
func (h *harness) certificate(name string) *x509.Certificate {
	h.t.Helper()
	block, _ := pem.Decode(h.secret(name).Data["tls.crt"])
	h.g.Expect(block).NotTo(BeNil(), "Secret %s holds no PEM certificate", name)
	cert, err := x509.ParseCertificate(block.Bytes)
	h.g.Expect(err).NotTo(HaveOccurred())
	return cert
}

// natsSANs are the SANs of both NATS server certificates in namespace ns.
func natsSANs(ns string, replicas int, external ...string) []string {
	var sans []string
	for i := range replicas {
		sans = append(sans, "nats-"+strconv.Itoa(i)+".nats-headless")
	}
	sans = append(sans, "*.nats-headless."+ns+".svc.cluster.local", "nats."+ns+".svc.cluster.local", "nats-server."+ns+".svc.cluster.local")
	return append(sans, external...)
}

func metaIn(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
