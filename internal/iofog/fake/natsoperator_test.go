package fake_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
)

// getOperator calls GET /nats/operator.
func getOperator(t *testing.T, srv *fake.Server, token string) iofog.NatsOperator {
	t.Helper()
	g := NewWithT(t)
	a := do(t, srv, http.MethodGet, "/api/v3/nats/operator", "", "", token)
	expectJSON(g, a, http.StatusOK, "")
	var o iofog.NatsOperator
	g.Expect(json.Unmarshal(a.body, &o)).To(Succeed())
	return o
}

// The operator lives in the database (nats-auth-service.js ensureOperator): every call answers
// the same one, a restart on the same directory finds it, and a new database makes a new one.
func TestNatsOperatorLivesInTheDatabase(t *testing.T) {
	g := NewWithT(t)
	srv := newFake(t)
	volume := t.TempDir()
	g.Expect(srv.Restart(volume)).To(Succeed())
	token := srv.IssueToken()
	g.Expect(do(t, srv, http.MethodGet, "/api/v3/nats/operator", "", "", "").status).To(Equal(http.StatusUnauthorized))

	first := getOperator(t, srv, token)
	g.Expect(first.Name).To(Equal("iofog-operator"))
	g.Expect(first.PublicKey).To(Equal(srv.Bootstrap().OperatorPublicKey))
	g.Expect(first.JWT).To(Equal(srv.Bootstrap().OperatorJwt))
	claims, err := jwt.DecodeOperatorClaims(first.JWT)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claims.Subject).To(Equal(first.PublicKey))
	g.Expect(claims.SystemAccount).To(Equal(srv.Bootstrap().SystemAccountPublicKey))
	g.Expect(getOperator(t, srv, token)).To(Equal(first), "the same operator on every call")

	g.Expect(srv.Restart(volume)).To(Succeed())
	token = srv.IssueToken()
	g.Expect(getOperator(t, srv, token)).To(Equal(first), "restarted on its claim")

	g.Expect(srv.Restart(t.TempDir())).To(Succeed())
	token = srv.IssueToken()
	other := getOperator(t, srv, token)
	g.Expect(other.PublicKey).NotTo(Equal(first.PublicKey), "a new database makes a new operator")
	g.Expect(srv.Bootstrap().OperatorPublicKey).To(Equal(other.PublicKey))

	srv.Wipe()
	token = srv.IssueToken()
	g.Expect(getOperator(t, srv, token).PublicKey).NotTo(BeElementOf(first.PublicKey, other.PublicKey), "wiped")
}

// POST /nats/operator/rotate answers the operator as it was and rotates it (nats-api-service.js
// rotateOperator, nats-auth-service.js rotateOperator): a new operator key, every account JWT
// re-signed by it with its key kept, the system user's creds unchanged, and the hub bundle
// written with the re-signed JWTs. The JWTs are checked with nats-io/jwt.
func TestRotatingTheNatsOperatorResignsEveryAccount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := newFake(t)
	token := srv.IssueToken()
	before := srv.Bootstrap()

	// An application account signed by the operator, as the Controller makes one.
	operatorKey, err := nkeys.FromSeed([]byte(before.OperatorSeed))
	g.Expect(err).NotTo(HaveOccurred())
	accountKey, err := nkeys.CreateAccount()
	g.Expect(err).NotTo(HaveOccurred())
	accountPub, err := accountKey.PublicKey()
	g.Expect(err).NotTo(HaveOccurred())
	ac := jwt.NewAccountClaims(accountPub)
	ac.Name = "app"
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{DiskStorage: -1, MemoryStorage: -1, Streams: -1, Consumer: -1}
	appJWT, err := ac.Encode(operatorKey)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(srv.AddNatsAccount(ctx, iofog.NatsAccount{Name: "app", PublicKey: accountPub, JWT: appJWT, ApplicationID: ptr.To(3)})).To(Succeed())

	kube := fakeclient.NewClientBuilder().Build()
	bundle := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: fake.HubJWTBundleConfigMap},
		Data:       map[string]string{before.SystemAccountPublicKey + ".jwt": before.SystemAccountJwt, accountPub + ".jwt": appJWT},
	}
	g.Expect(kube.Create(ctx, bundle)).To(Succeed())
	srv.SetKubernetes(kube, "edge")

	a := doJSON(t, srv, http.MethodPost, "/api/v3/nats/operator/rotate", "", token)
	expectJSON(g, a, http.StatusOK, "")
	var answered iofog.NatsOperator
	g.Expect(json.Unmarshal(a.body, &answered)).To(Succeed())
	g.Expect(answered.PublicKey).To(Equal(before.OperatorPublicKey), "the answer is the operator before the rotation")

	after := srv.Bootstrap()
	g.Expect(getOperator(t, srv, token).PublicKey).To(Equal(after.OperatorPublicKey))
	g.Expect(after.OperatorPublicKey).NotTo(Equal(before.OperatorPublicKey))
	g.Expect(after.OperatorSeed).NotTo(Equal(before.OperatorSeed))
	newKey, err := nkeys.FromSeed([]byte(after.OperatorSeed))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(newKey.PublicKey()).To(Equal(after.OperatorPublicKey))
	oc, err := jwt.DecodeOperatorClaims(after.OperatorJwt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(oc.Subject).To(Equal(after.OperatorPublicKey))
	g.Expect(oc.Name).To(Equal("iofog-operator"))
	g.Expect(oc.SystemAccount).To(Equal(before.SystemAccountPublicKey), "the system account keeps its key")
	g.Expect(after.SystemAccountPublicKey).To(Equal(before.SystemAccountPublicKey))
	g.Expect(after.SysUserCredsBase64).To(Equal(before.SysUserCredsBase64), "users are signed by their account: unchanged")

	byKey := map[string]iofog.NatsAccount{}
	for _, acc := range srv.NatsAccounts() {
		byKey[acc.PublicKey] = acc
	}
	g.Expect(byKey).To(HaveLen(2))
	for pub, acc := range byKey {
		claims, err := jwt.DecodeAccountClaims(acc.JWT)
		g.Expect(err).NotTo(HaveOccurred(), "account %s", acc.Name)
		g.Expect(claims.Issuer).To(Equal(after.OperatorPublicKey), "account %s re-signed", acc.Name)
		g.Expect(claims.Subject).To(Equal(pub))
	}
	appClaims, err := jwt.DecodeAccountClaims(byKey[accountPub].JWT)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(appClaims.Name).To(Equal("app"))
	g.Expect(appClaims.Limits.JetStreamLimits.DiskStorage).To(Equal(int64(-1)), "the claims are kept")

	g.Expect(kube.Get(ctx, types.NamespacedName{Namespace: "edge", Name: fake.HubJWTBundleConfigMap}, bundle)).To(Succeed())
	g.Expect(bundle.Data).To(Equal(map[string]string{
		after.SystemAccountPublicKey + ".jwt": after.SystemAccountJwt,
		accountPub + ".jwt":                   byKey[accountPub].JWT,
	}), "the reconcile task writes the re-signed JWTs")
}
