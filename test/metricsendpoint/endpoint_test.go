// Package metricsendpoint tests the manager's secure metrics endpoint. It is its own package
// (its own test binary) because controller-runtime refuses two controllers of one name in a
// process, and package controllers' tests already start a manager.
package metricsendpoint_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/internal/metrics"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// The secure metrics endpoint of the real manager, scraped over HTTPS (verified against the CA
// of the serving certificate): no token is 401, a ServiceAccount without the metrics-reader
// ClusterRole (config/rbac/metrics_reader_role.yaml, as shipped) is 403, a bound one is 200 and
// reads the operator's metrics, among them those of a ControlPlane the manager reconciles.
func TestSecureMetricsEndpoint(t *testing.T) {
	env := testenv.StartForTest(t, testenv.Options{})
	g := NewWithT(t)
	ctx := t.Context()

	certDir, caPool := servingCertificate(t)
	addr := testenv.MustFreeAddr(t)
	opts := controllers.DefaultOptions()
	g.Expect(opts.MetricsSecure).To(BeTrue(), "secure is the default")
	opts.MetricsBindAddress = addr
	opts.MetricsCertDir = certDir
	opts.HealthProbeBindAddress = "0"
	opts.Apps.GitCacheDir = t.TempDir()
	mgr, err := controllers.New(env.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})

	// ServiceAccounts: reader bound to the shipped metrics-reader ClusterRole, stranger not.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metrics-"}}
	g.Expect(env.Client.Create(ctx, ns)).To(Succeed())
	role := &rbacv1.ClusterRole{}
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "rbac", "metrics_reader_role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(yaml.UnmarshalStrict(data, role)).To(Succeed())
	role.Name = ns.Name + "-" + role.Name
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), role) })
	for _, sa := range []string{"reader", "stranger"} {
		g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: ns.Name}})).To(Succeed())
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns.Name + "-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: ns.Name}},
	}
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return tr.Status.Token
	}
	reader, stranger := token("reader"), token("stranger")

	// A ControlPlane the manager reconciles: its router waits for a LoadBalancer address, which
	// is what the metrics must show.
	cp := testfixture.ControlPlane(testfixture.Named("pot"), testfixture.InNamespace(ns.Name),
		testfixture.WithBootstrap("admin@example.com", "bootstrap-password"), testfixture.WithPostgres("db-secret-value"), testfixture.WithoutNATS())
	g.Expect(env.Client.Create(ctx, cp)).To(Succeed())

	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: caPool, MinVersion: tls.VersionTLS12},
	}}
	scrape := func(bearer string) (int, string, error) {
		code, body, err := testenv.Get(ctx, hc, "https://"+addr+"/metrics", bearer)
		return code, string(body), err
	}
	status := func(bearer string) func() (int, error) {
		return func() (int, error) {
			code, _, err := scrape(bearer)
			return code, err
		}
	}

	g.Eventually(status(""), 30*time.Second, 200*time.Millisecond).Should(Equal(http.StatusUnauthorized))
	g.Expect(status(stranger)()).To(Equal(http.StatusForbidden))
	// A token the API server cannot parse is refused too; controller-runtime's filter answers 500
	// because the TokenReview reports an error rather than "not authenticated".
	g.Expect(status("not-a-token")()).To(BeNumerically(">=", 400))

	wantSeries := []string{
		fmt.Sprintf(`%s{component="router",outcome="requeue"}`, metrics.ComponentPassesTotal),
		fmt.Sprintf(`%s{component="router",controlplane="pot",controlplane_namespace=%q,reason=%q} 1`,
			metrics.ComponentReason, ns.Name, datasancev3.ReasonWaitingForLoadBalancer),
		metrics.GitClones + " ",
		metrics.TenantClients + " ",
		metrics.GitPushDuration + "_count",
		"controller_runtime_reconcile_total",
	}
	g.Eventually(func(g Gomega) {
		code, body, err := scrape(reader)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(code).To(Equal(http.StatusOK))
		for _, s := range wantSeries {
			g.Expect(body).To(ContainSubstring(s))
		}
	}, 30*time.Second, 250*time.Millisecond).Should(Succeed())

	// The plain HTTP port answers nothing: the endpoint is TLS only.
	plain := &http.Client{Timeout: 2 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	g.Expect(err).NotTo(HaveOccurred())
	if resp, err := plain.Do(req); err == nil {
		defer resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), "a TLS server answers plain HTTP with 400")
		body, _ := io.ReadAll(resp.Body)
		g.Expect(strings.Contains(string(body), "kubeopera_")).To(BeFalse())
	}
}

// servingCertificate writes tls.crt/tls.key for 127.0.0.1, signed by a fresh CA, and returns
// the directory and a pool with the CA.
func servingCertificate(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	now := time.Now()
	ca, err := pki.GenerateCA("metrics-test-ca", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := pki.GenerateLeaf(ca, "127.0.0.1", []string{"127.0.0.1"}, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{pki.TLSCertKey: leaf.CertPEM, pki.TLSPrivateKeyKey: leaf.KeyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	return dir, pool
}
