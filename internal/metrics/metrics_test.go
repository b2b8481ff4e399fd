package metrics

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// fresh returns a set registered on its own registry, with a settable clock.
func fresh(t *testing.T) (*set, *prometheus.Registry, *time.Time) {
	t.Helper()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := newSet(func() time.Time { return now })
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(collectorList(s.collectors())); err != nil {
		t.Fatal(err)
	}
	return s, reg, &now
}

// collectorList registers several collectors as one.
type collectorList []prometheus.Collector

func (l collectorList) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range l {
		c.Describe(ch)
	}
}

func (l collectorList) Collect(ch chan<- prometheus.Metric) {
	for _, c := range l {
		c.Collect(ch)
	}
}

func TestComponentPassReplacesReason(t *testing.T) {
	g := NewWithT(t)
	s, reg, _ := fresh(t)
	s.observeComponentPass("ns", "cp", "controller", OutcomeRequeue, "ControllerUnavailable")
	s.observeComponentPass("ns", "cp", "controller", OutcomeRequeue, "ControllerUnavailable")
	s.observeComponentPass("ns", "cp", "controller", OutcomeContinue, "Reconciled")
	s.observeComponentPass("ns", "cp", "router", OutcomeError, "ApplyFailed")

	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubeopera_controlplane_component_passes_total ControlPlane component passes (router, nats, controller) by outcome: continue, requeue or error.
# TYPE kubeopera_controlplane_component_passes_total counter
kubeopera_controlplane_component_passes_total{component="controller",outcome="continue"} 1
kubeopera_controlplane_component_passes_total{component="controller",outcome="requeue"} 2
kubeopera_controlplane_component_passes_total{component="router",outcome="error"} 1
# HELP kubeopera_controlplane_component_reason 1 for the reason a ControlPlane component's last pass ended with (Reconciled when it finished).
# TYPE kubeopera_controlplane_component_reason gauge
kubeopera_controlplane_component_reason{component="controller",controlplane="cp",controlplane_namespace="ns",reason="Reconciled"} 1
kubeopera_controlplane_component_reason{component="router",controlplane="cp",controlplane_namespace="ns",reason="ApplyFailed"} 1
`), ComponentPassesTotal, ComponentReason)).To(Succeed())
}

func TestForgetControlPlaneDeletesItsSeriesOnly(t *testing.T) {
	g := NewWithT(t)
	s, reg, _ := fresh(t)
	for _, name := range []string{"a", "b"} {
		s.observeComponentPass("ns", name, "nats", OutcomeContinue, "Reconciled")
		s.setRegistered("ns", name, name == "a")
		s.observeCertificates("ns", name, map[string]map[string][]byte{"nats-ca": {"tls.crt": selfSigned(t, time.Unix(2000000000, 0))}}, "tls.crt")
	}
	s.forgetControlPlane("ns", "a")

	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubeopera_certificate_expiration_timestamp_seconds notAfter (Unix seconds) of each certificate in the TLS Secrets the operator issued or imported.
# TYPE kubeopera_certificate_expiration_timestamp_seconds gauge
kubeopera_certificate_expiration_timestamp_seconds{controlplane="b",controlplane_namespace="ns",secret="nats-ca"} 2e+09
# HELP kubeopera_controlplane_component_reason 1 for the reason a ControlPlane component's last pass ended with (Reconciled when it finished).
# TYPE kubeopera_controlplane_component_reason gauge
kubeopera_controlplane_component_reason{component="nats",controlplane="b",controlplane_namespace="ns",reason="Reconciled"} 1
# HELP kubeopera_controlplane_registered 1 when the last pass found the ControlPlane's router, NATS hub and CAs registered with its Controller, else 0.
# TYPE kubeopera_controlplane_registered gauge
kubeopera_controlplane_registered{controlplane="b",controlplane_namespace="ns"} 0
`), ComponentReason, ControlPlaneRegistered, CertificateExpirationTime)).To(Succeed())

	// A forgotten ControlPlane that comes back starts clean: its old reason is not deleted twice
	// nor kept.
	s.observeComponentPass("ns", "a", "nats", OutcomeRequeue, "WaitingForDeployment")
	g.Expect(testutil.ToFloat64(s.componentReason.WithLabelValues("ns", "a", "nats", "WaitingForDeployment"))).To(Equal(1.0))
}

func TestCertificatesSkipUnparsableData(t *testing.T) {
	g := NewWithT(t)
	s, reg, _ := fresh(t)
	notAfter := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	key := []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")
	s.observeCertificates("ns", "cp", map[string]map[string][]byte{
		"router-ca":    {"tls.crt": selfSigned(t, notAfter)},
		"key-first":    {"tls.crt": append(key, selfSigned(t, notAfter.Add(time.Hour))...)},
		"garbage":      {"tls.crt": []byte("not a certificate")},
		"empty":        {},
		"broken-block": {"tls.crt": []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")},
	}, "tls.crt")
	g.Expect(testutil.CollectAndCount(s.certExpiry)).To(Equal(2))
	g.Expect(testutil.ToFloat64(s.certExpiry.WithLabelValues("ns", "cp", "router-ca"))).To(Equal(float64(notAfter.Unix())))
	g.Expect(testutil.ToFloat64(s.certExpiry.WithLabelValues("ns", "cp", "key-first"))).To(Equal(float64(notAfter.Add(time.Hour).Unix())))
	g.Expect(testutil.GatherAndCount(reg, CertificateExpirationTime)).To(Equal(2))
}

func TestControllerEndpointTemplates(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v3/status":                          "/status",
		"/prefix/api/v3/user/login":               "/user/login",
		"/api/v3/certificates/ca/router-ca":       "/certificates/ca/{name}",
		"/api/v3/certificates/ca":                 "/certificates/ca",
		"/api/v3/certificates/ca/a/b":             "other",
		"/api/v3/nats/hub":                        "/nats/hub",
		"/api/v3/nats/bootstrap":                  "/nats/bootstrap",
		"/api/v3/router":                          "/router",
		"/api/v3/microservices/abc":               "other",
		"/realms/x/protocol/openid-connect/token": "identity_provider",
	} {
		if got := ControllerEndpoint(path); got != want {
			t.Errorf("ControllerEndpoint(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestControllerAPITransportCountsAnswersAndFailures(t *testing.T) {
	g := NewWithT(t)
	s, _, _ := fresh(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/status") {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: s.controllerAPITransport(nil)}
	get := func(url string) error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	g.Expect(get(srv.URL + "/api/v3/status")).To(Succeed())
	g.Expect(get(srv.URL + "/api/v3/certificates/ca/nats-ca")).To(Succeed())

	// A port nobody listens on: the request fails without an answer.
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	closed := "http://" + l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	g.Expect(get(closed + "/api/v3/status")).NotTo(Succeed())

	g.Expect(testutil.ToFloat64(s.apiRequests.WithLabelValues("GET", "/status", "2xx"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(s.apiRequests.WithLabelValues("GET", "/certificates/ca/{name}", "4xx"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(s.apiRequests.WithLabelValues("GET", "/status", "error"))).To(Equal(1.0))
	g.Expect(testutil.CollectAndCount(s.apiDuration)).To(Equal(2)) // two (method, endpoint) pairs

	rt, ok := hc.Transport.(interface{ Unwrap() http.RoundTripper })
	g.Expect(ok).To(BeTrue())
	g.Expect(rt.Unwrap()).To(BeIdenticalTo(http.DefaultTransport))
}

func TestAppPassesSyncLagAndNotSynced(t *testing.T) {
	g := NewWithT(t)
	s, reg, now := fresh(t)

	// Already Synced when this process first sees it: no lag is guessed.
	s.observeAppPass(AppPass{Namespace: "t", Name: "old", ReadyReason: "Succeeded", Commit: "c0", Synced: true})
	// A new app: pushed, not yet applied, then applied 42 s later.
	s.observeAppPass(AppPass{Namespace: "t", Name: "web", ReadyReason: "Succeeded", Commit: "c1", SyncedReason: "RevisionNotApplied"})
	s.observeAppPass(AppPass{Namespace: "t", Name: "db", ReadyReason: "GitAuthFailed", SyncedReason: "Unknown"})
	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubeopera_apps_not_synced KubeOperaApps whose Synced condition is not True for their last pushed commit, by reason.
# TYPE kubeopera_apps_not_synced gauge
kubeopera_apps_not_synced{reason="RevisionNotApplied"} 1
kubeopera_apps_not_synced{reason="Unknown"} 1
`), AppsNotSynced)).To(Succeed())

	*now = now.Add(42 * time.Second)
	s.observeAppPass(AppPass{Namespace: "t", Name: "web", ReadyReason: "Succeeded", Commit: "c1", Synced: true})
	// Later passes of the same commit observe nothing more.
	s.observeAppPass(AppPass{Namespace: "t", Name: "web", ReadyReason: "Succeeded", Commit: "c1", Synced: true})
	s.observeAppPass(AppPass{Namespace: "t", Name: "old", ReadyReason: "Succeeded", Commit: "c0", Synced: true})
	forgetApp(s, "t", "db")

	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubeopera_app_placements_total KubeOperaApp passes by the reason of the Ready condition they ended with.
# TYPE kubeopera_app_placements_total counter
kubeopera_app_placements_total{reason="GitAuthFailed"} 1
kubeopera_app_placements_total{reason="Succeeded"} 5
# HELP kubeopera_app_sync_lag_seconds Time from a pushed commit first seen in an app's status to Flux having applied it (app Synced).
# TYPE kubeopera_app_sync_lag_seconds histogram
kubeopera_app_sync_lag_seconds_bucket{le="1"} 0
kubeopera_app_sync_lag_seconds_bucket{le="5"} 0
kubeopera_app_sync_lag_seconds_bucket{le="15"} 0
kubeopera_app_sync_lag_seconds_bucket{le="30"} 0
kubeopera_app_sync_lag_seconds_bucket{le="60"} 1
kubeopera_app_sync_lag_seconds_bucket{le="120"} 1
kubeopera_app_sync_lag_seconds_bucket{le="300"} 1
kubeopera_app_sync_lag_seconds_bucket{le="600"} 1
kubeopera_app_sync_lag_seconds_bucket{le="1800"} 1
kubeopera_app_sync_lag_seconds_bucket{le="3600"} 1
kubeopera_app_sync_lag_seconds_bucket{le="+Inf"} 1
kubeopera_app_sync_lag_seconds_sum 42
kubeopera_app_sync_lag_seconds_count 1
`), AppPlacementsTotal, AppSyncLag, AppsNotSynced)).To(Succeed())

	// A new commit restarts the clock.
	*now = now.Add(time.Minute)
	s.observeAppPass(AppPass{Namespace: "t", Name: "web", ReadyReason: "Succeeded", Commit: "c2", SyncedReason: "RevisionNotApplied"})
	*now = now.Add(3 * time.Second)
	s.observeAppPass(AppPass{Namespace: "t", Name: "web", ReadyReason: "Succeeded", Commit: "c2", Synced: true})
	g.Expect(histogramSumCount(t, reg, AppSyncLag)).To(Equal([2]float64{45, 2}))
}

// forgetApp is ForgetApp on a test set.
func forgetApp(s *set, namespace, name string) { s.apps.forget(namespace, name) }

func TestGitWrites(t *testing.T) {
	g := NewWithT(t)
	s, reg, _ := fresh(t)
	s.observeGitWrite(300*time.Millisecond, 3, GitOutcomeSuccess)
	s.observeGitWrite(2*time.Second, 1, GitOutcomeConflict)
	s.observeGitWrite(time.Second, 1, GitOutcomeAuthFailed)
	s.gitRetries.Inc()
	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP kubeopera_git_pushes_total Git batch writes by outcome: success, unchanged (nothing to push), conflict, auth_failed, error.
# TYPE kubeopera_git_pushes_total counter
kubeopera_git_pushes_total{outcome="auth_failed"} 1
kubeopera_git_pushes_total{outcome="conflict"} 1
kubeopera_git_pushes_total{outcome="success"} 1
# HELP kubeopera_git_push_retries_total Git pushes redone because the remote branch moved (non-fast-forward).
# TYPE kubeopera_git_push_retries_total counter
kubeopera_git_push_retries_total 1
`), GitPushesTotal, GitPushRetriesTotal)).To(Succeed())
	g.Expect(testutil.GatherAndCount(reg, GitPushBatchSize)).To(Equal(1))
}

func TestStdIsRegisteredOnControllerRuntimeRegistry(t *testing.T) {
	g := NewWithT(t)
	SetGitClones(2)
	SetTenantClients(3)
	g.Expect(testutil.ToFloat64(std.gitClones)).To(Equal(2.0))
	g.Expect(testutil.ToFloat64(std.tenantCache)).To(Equal(3.0))
	// Registering again on controller-runtime's registry must fail: std is already there.
	err := ctrlmetrics.Registry.Register(std.gitClones)
	var are prometheus.AlreadyRegisteredError
	g.Expect(errors.As(err, &are)).To(BeTrue(), "got %v", err)
}

// selfSigned returns a PEM certificate valid until notAfter.
func selfSigned(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "test"},
		NotBefore:    notAfter.Add(-time.Hour),
		NotAfter:     notAfter,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// histogramSumCount returns the sum and count of the unlabelled histogram name in reg.
func histogramSumCount(t *testing.T, reg prometheus.Gatherer, name string) [2]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return [2]float64{h.GetSampleSum(), float64(h.GetSampleCount())}
		}
	}
	t.Fatalf("%s not gathered", name)
	return [2]float64{}
}
