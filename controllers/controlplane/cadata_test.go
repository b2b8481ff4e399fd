package controlplane_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers/controlplane"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// agentCertificate is the name of a certificate the Controller signed for an agent: what every
// provisioned agent's router and NATS certificates are, and what makes the Controller refuse to
// delete the CA.
const agentCertificate = "router-site-server-agent-1"

// The Controller's SQLite database is on PVC controller-sqlite: the 3.8+ image stores it where
// SQLITE_STORAGE_DIR says (else in its package directory, on the pod's own filesystem), and the
// fake Controller keeps its database in the directory that path maps to. A pod restart gets a new
// filesystem and the same claim; the router, the CAs and what they signed are still there, and
// the operator, which sees a new Controller process, reads the registration back and writes nothing.
func TestSQLiteDatabaseSurvivesAControllerRestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	claim := t.TempDir()
	h.create(h.controlPlane(testfixture.WithSQLite()))
	for range 8 {
		h.assignAddresses()
		_, _ = h.reconcile()
		if h.exists(&appsv1.Deployment{}, "controller") {
			break
		}
	}
	// The Controller pod starts: its database lives where the Deployment puts it.
	g.Expect(h.api.Restart(h.controllerDataDir(claim, t.TempDir()))).To(Succeed())
	h.api.SetStartedAt(time.Now().Add(-time.Hour))
	h.bringUpExisting()
	g.Expect(h.api.IssueCertificate(agentCertificate, "router-site-ca")).To(Succeed())
	cas := h.api.ImportedCAs()
	g.Expect(cas).To(ConsistOf("router-site-ca", "default-router-local-ca"))
	imports := len(h.api.RequestsTo(http.MethodPost, "/api/v3/certificates/ca"))

	// The pod restarts (rollout, drain, OOM): a new container filesystem, the same claim.
	g.Expect(h.api.Restart(h.controllerDataDir(claim, t.TempDir()))).To(Succeed())
	g.Expect(h.api.ImportedCAs()).To(ConsistOf(cas), "the database is on the claim")
	router, ok := h.api.Router()
	g.Expect(ok).To(BeTrue(), "the router registration survived")
	g.Expect(router.Host).To(Equal(routerLBIP))

	h.clock.SetTime(h.clock.Now().Add(controlplane.DefaultControllerVerifyInterval))
	h.mustBeReady()
	g.Expect(h.api.RequestsTo(http.MethodPost, "/api/v3/certificates/ca")).To(HaveLen(imports), "nothing had to be imported again")
	g.Expect(h.api.RequestsTo(http.MethodGet, "/api/v3/router")).To(HaveLen(1), "a new process: the registration is read back")
	g.Expect(h.api.RequestsTo(http.MethodPut, "/api/v3/router")).To(HaveLen(1), "and not written again")
}

// controllerDataDir is the directory of this test's machine that holds the database of the
// Controller pod Deployment controller describes: the image's storage directory
// (fake.SQLiteStorageDir of the container's environment) on the controller-sqlite claim when a
// mount of the claim contains it (claimDir), else on the pod's own filesystem (podDir).
func (h *harness) controllerDataDir(claimDir, podDir string) string {
	h.t.Helper()
	pod := h.deployment("controller").Spec.Template.Spec
	c := pod.Containers[0]
	dir := fake.SQLiteStorageDir(envOf(c))
	onClaim := map[string]bool{}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "controller-sqlite" {
			onClaim[v.Name] = true
		}
	}
	for _, m := range c.VolumeMounts {
		if !onClaim[m.Name] {
			continue
		}
		if rel, err := filepath.Rel(m.MountPath, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.Join(claimDir, rel)
		}
	}
	return filepath.Join(podDir, dir)
}

// A ControlPlane deleted and created again keeps its database and its CAs: the CA Secrets are
// not owned, so the garbage collector leaves them with the database, and the new ControlPlane
// issues its leaves under the CAs the Controller holds and has signed its agents' certificates
// with. Nothing is imported again.
func TestRecreatedControlPlaneRunsOnTheControllersCAs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	g.Expect(h.api.IssueCertificate(agentCertificate, "router-site-ca")).To(Succeed())
	before := h.secret("router-site-ca")
	g.Expect(before.OwnerReferences).To(BeEmpty())

	old := h.get()
	g.Expect(env.Client.Delete(h.ctx, old)).To(Succeed())
	collected := h.collectGarbage(old.UID)
	g.Expect(collected).To(ContainElements("Secret/router-site-server", "Secret/router-local-server"))
	g.Expect(collected).NotTo(ContainElements("Secret/router-site-ca", "Secret/default-router-local-ca"))
	h.api.Reset()

	h.bringUp(h.controlPlane())
	held, _, ok := h.api.CA("router-site-ca")
	g.Expect(ok).To(BeTrue())
	g.Expect(h.secret("router-site-ca").Data[pki.TLSCertKey]).To(Equal(held), "the Controller's CA")
	g.Expect(h.secret("router-site-ca").UID).To(Equal(before.UID), "the same Secret")
	g.Expect(h.certificate("router-site-server").CheckSignatureFrom(parseCert(g, held))).To(Succeed(),
		"the new leaf is signed by the CA the agents trust")
	g.Expect(h.api.RequestsTo(http.MethodPost, "/api/v3/certificates/ca")).To(BeEmpty())
	g.Expect(h.api.RequestsTo(http.MethodDelete, "/api/v3/certificates/ca/router-site-ca")).To(BeEmpty())
}

// A CA Secret that is lost (deleted by hand, or collected by an earlier operator version) is
// restored from the Controller's copy, which answers certificate and key: the same CA, so the
// leaves under it stay as they are, and nothing is imported or deleted in the Controller.
func TestLostCASecretIsRestoredFromTheController(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	g.Expect(h.api.IssueCertificate(agentCertificate, "router-site-ca")).To(Succeed())
	before := h.secret("router-site-ca")
	leaf := h.secret("router-site-server")
	g.Expect(env.Client.Delete(h.ctx, before)).To(Succeed())
	h.api.Reset()

	h.mustBeReady()
	restored := h.secret("router-site-ca")
	g.Expect(restored.UID).NotTo(Equal(before.UID))
	g.Expect(restored.Data[pki.TLSCertKey]).To(Equal(before.Data[pki.TLSCertKey]))
	g.Expect(restored.Data[pki.TLSPrivateKeyKey]).To(Equal(before.Data[pki.TLSPrivateKeyKey]))
	g.Expect(restored.Data[pki.CACertKey]).To(Equal(before.Data[pki.TLSCertKey]))
	g.Expect(restored.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(restored.OwnerReferences).To(BeEmpty())
	g.Expect(restored.Labels).To(HaveKeyWithValue("app.kubernetes.io/instance", cpName))
	g.Expect(h.secret("router-site-server").ResourceVersion).To(Equal(leaf.ResourceVersion), "the leaf is kept: same CA")
	g.Expect(registrationCalls(h.api.Calls())).To(Equal([]string{"GET /api/v3/certificates/ca/router-site-ca"}))
	g.Expect(h.rec.list()).To(ContainElement(And(HavePrefix("Normal CARestored"), ContainSubstring("router-site-ca"))))

	h.api.Reset()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty(), "restored once; recorded")
}

// A missing CA Secret whose Controller copy is no CA this operator can use (here an ECDSA key:
// the router and NATS read RSA only) is neither restored nor replaced by a new CA the Controller
// does not hold: CARestoreFailed, terminal, one Warning Event, no Secret and no leaf. Bringing
// the Secret fixes it.
func TestUnusableControllerCopyOfAMissingCAIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	g.Expect(h.api.ImportCA("router-site-ca")).To(Succeed()) // an ECDSA CA
	h.create(h.controlPlane())
	h.mustRequeue(controlplane.RequeueTransition)
	var last error
	for range 3 {
		h.assignAddresses()
		_, last = h.reconcile()
	}
	g.Expect(last).To(HaveOccurred())
	g.Expect(last).To(MatchError(reconcile.TerminalError(nil)))
	st := h.get().Status.Router
	g.Expect(st.Reason).To(Equal(datasancev3.ReasonCARestoreFailed))
	g.Expect(st.Message).To(And(ContainSubstring("router-site-ca"), ContainSubstring("not an RSA key")))
	g.Expect(h.exists(&corev1.Secret{}, "router-site-ca")).To(BeFalse(), "no CA the Controller does not hold")
	g.Expect(h.exists(&corev1.Secret{}, "router-site-server")).To(BeFalse())
	g.Expect(warnings(h, datasancev3.ReasonCARestoreFailed)).To(HaveLen(1), "one Event per cause")
	g.Expect(h.api.RequestsTo(http.MethodPost, "/api/v3/certificates/ca")).To(BeEmpty())
}

// A CA Secret that holds another CA than the Controller's copy of that name, which this
// ControlPlane never imported (a ControlPlane created with new CA Secrets on a kept database):
// nothing is signed under either, CAConflict, one Warning Event. Deleting the Secret restores the
// Controller's CA, and the ControlPlane becomes ready on it.
func TestCASecretConflictingWithTheControllerIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	theirs, err := pki.GenerateCA("router-site-ca", time.Now(), 0, pki.WithKeyGenerator(testKeyGenerator))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.api.AddCA("router-site-ca", theirs.CertPEM, theirs.KeyPEM)).To(Succeed())
	g.Expect(h.api.IssueCertificate(agentCertificate, "router-site-ca")).To(Succeed())
	ours := h.createTLSSecret("router-site-ca")
	h.create(h.controlPlane())
	h.mustRequeue(controlplane.RequeueTransition)
	var last error
	for range 3 {
		h.assignAddresses()
		_, last = h.reconcile()
	}
	g.Expect(last).To(MatchError(reconcile.TerminalError(nil)))
	st := h.get().Status.Router
	g.Expect(st.Reason).To(Equal(datasancev3.ReasonCAConflict))
	g.Expect(st.Message).To(ContainSubstring("Delete Secret router-site-ca"))
	g.Expect(h.exists(&corev1.Secret{}, "router-site-server")).To(BeFalse(), "nothing is signed under either CA")
	g.Expect(warnings(h, datasancev3.ReasonCAConflict)).To(HaveLen(1))
	g.Expect(h.api.RequestsTo(http.MethodPost, "/api/v3/certificates/ca")).To(BeEmpty())
	g.Expect(h.api.RequestsTo(http.MethodDelete, "/api/v3/certificates/ca/router-site-ca")).To(BeEmpty(), "a CA it did not import is never replaced")

	g.Expect(env.Client.Delete(h.ctx, ours)).To(Succeed())
	h.bringUpExisting()
	g.Expect(h.secret("router-site-ca").Data[pki.TLSCertKey]).To(Equal(theirs.CertPEM))
	g.Expect(h.certificate("router-site-server").CheckSignatureFrom(theirs.Cert)).To(Succeed())
}

// Rotating a CA the Controller has used: the user puts a new CA into the Secret. The Controller
// refuses to delete its copy while certificates it signed for agents exist (the operator reads
// them from its certificate list and names them), so the operator issues nothing
// under the new CA (the router keeps its leaf under the old one), reports CARotationBlocked with
// one Warning Event and asks again every minute. Deleting the Secret instead restores the
// Controller's CA. Once the certificates the old CA signed are deleted in the Controller, the
// next pass replaces the Controller's copy, issues the leaf under the new CA and is ready.
func TestCARotationWaitsForTheController(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	g.Expect(h.api.IssueCertificate(agentCertificate, "router-site-ca")).To(Succeed())
	old := h.secret("router-site-ca")
	leaf := h.secret("router-site-server")

	rotated, err := pki.GenerateCA("router-site-ca", time.Now(), 0)
	g.Expect(err).NotTo(HaveOccurred())
	h.putSecretData("router-site-ca", pki.SecretData(rotated, nil))
	h.api.Reset()
	for range 2 {
		h.mustRequeue(time.Minute)
	}
	cp := h.get()
	g.Expect(cp.Status.Router.Reason).To(Equal(datasancev3.ReasonCARotationBlocked))
	g.Expect(h.trueCondition().Reason).To(Equal(datasancev3.ReasonCARotationBlocked))
	g.Expect(h.secret("router-site-server").ResourceVersion).To(Equal(leaf.ResourceVersion), "no leaf under a CA the Controller does not hold")
	g.Expect(h.api.RequestsTo(http.MethodGet, "/api/v3/certificates")).To(HaveLen(2), "the certificate list says an agent depends on it")
	g.Expect(h.api.RequestsTo(http.MethodDelete, "/api/v3/certificates/ca/router-site-ca")).To(BeEmpty())
	g.Expect(h.api.RequestsTo(http.MethodPost, "/api/v3/certificates/ca")).To(BeEmpty())
	g.Expect(h.trueCondition().Message).To(ContainSubstring("("+agentCertificate+")"), "the message names the agents' certificates")
	g.Expect(warnings(h, datasancev3.ReasonCARotationBlocked)).To(HaveLen(1), "one Event per cause")
	held, _, _ := h.api.CA("router-site-ca")
	g.Expect(held).To(Equal(old.Data[pki.TLSCertKey]), "the Controller keeps the CA its agents trust")

	// Abort: the Secret deleted, the Controller's CA comes back, the leaf was never touched.
	g.Expect(env.Client.Delete(h.ctx, h.secret("router-site-ca"))).To(Succeed())
	h.mustBeReady()
	g.Expect(h.secret("router-site-ca").Data[pki.TLSCertKey]).To(Equal(old.Data[pki.TLSCertKey]))
	g.Expect(h.secret("router-site-server").ResourceVersion).To(Equal(leaf.ResourceVersion))

	// Finish: the new CA again, and the certificates the old one signed deleted in the Controller.
	h.putSecretData("router-site-ca", pki.SecretData(rotated, nil))
	h.mustRequeue(time.Minute)
	h.deleteControllerCertificate(agentCertificate)
	h.api.Reset()
	// The leaf under the new CA rolls the router pods: that pass waits for them, the pass after
	// is ready.
	h.rollOut()
	h.mustBeReady()
	g.Expect(registrationCalls(h.api.Calls())).To(Equal([]string{
		"GET /api/v3/certificates/ca/router-site-ca", "GET /api/v3/certificates",
		"DELETE /api/v3/certificates/ca/router-site-ca", "POST /api/v3/certificates/ca",
	}))
	held, _, _ = h.api.CA("router-site-ca")
	g.Expect(held).To(Equal(rotated.CertPEM))
	g.Expect(h.certificate("router-site-server").CheckSignatureFrom(rotated.Cert)).To(Succeed(), "the leaf is issued under the new CA")
	g.Expect(h.rec.list()).To(ContainElement(HavePrefix("Normal CAReimported")))
	h.api.Reset()
	h.mustBeReady()
	g.Expect(h.api.Calls()).To(BeEmpty())
}

// CA Secrets an earlier operator version created with an owner reference are released on the
// next pass, one patch each, so that deleting the ControlPlane keeps them.
func TestOwnedCASecretsAreReleased(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	g := h.g
	h.bringUp(h.controlPlane())
	cp := h.get()
	owner := metav1.OwnerReference{APIVersion: datasancev3.GroupVersion.String(), Kind: "ControlPlane", Name: cp.Name,
		UID: cp.UID, Controller: new(true), BlockOwnerDeletion: new(true)}
	for _, name := range []string{"router-site-ca", "default-router-local-ca"} {
		sec := h.secret(name)
		sec.OwnerReferences = []metav1.OwnerReference{owner}
		g.Expect(env.Client.Update(h.ctx, sec)).To(Succeed())
	}
	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeEquivalentTo(2), "one patch each")
	for _, name := range []string{"router-site-ca", "default-router-local-ca"} {
		g.Expect(h.secret(name).OwnerReferences).To(BeEmpty(), name)
	}
	h.writes.Store(0)
	h.mustBeReady()
	g.Expect(h.writes.Load()).To(BeZero())
}

// putSecretData replaces the data of Secret name.
func (h *harness) putSecretData(name string, data map[string][]byte) {
	h.t.Helper()
	sec := h.secret(name)
	sec.Data = data
	h.g.Expect(env.Client.Update(h.ctx, sec)).To(Succeed())
}

// deleteControllerCertificate deletes a certificate the Controller signed, through its API, as an
// administrator finishing a CA rotation does.
func (h *harness) deleteControllerCertificate(name string) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, h.api.URL()+"/api/v3/certificates/"+name, nil)
	h.g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+h.api.IssueToken())
	resp, err := http.DefaultClient.Do(req) // the harness's fake serves plain HTTP

	h.g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	h.g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
}

// warnings are the Warning Events with reason.
func warnings(h *harness, reason string) []string {
	var out []string
	for _, e := range h.rec.list() {
		if strings.HasPrefix(e, "Warning "+reason+" ") {
			out = append(out, e)
		}
	}
	return out
}
