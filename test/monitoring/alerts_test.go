package monitoring_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/controllers"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/metrics"
	"github.com/kubeopera/kubeopera-operator/internal/pki"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// steps is how many scrapes the run takes; each scrape stands for one minute of Prometheus time
// (scrape interval and rule evaluation interval), so the longest `for` (15m) is covered.
const steps = 20

// TestAlertsFireOnARealRun runs the manager against bad inputs an operator meets in production
// and checks that each alert of config/prometheus/prometheus_rule.yaml fires, with the labels
// that point at the culprit:
//   - ControlPlane in namespace unreachable: its Controller's port is closed
//     (KubeOperaControllerUnreachable);
//   - ControlPlane in namespace login: the Controller (the ioFog double) rejects the bootstrap
//     password (KubeOperaRegistrationFailing); its router CA, brought by the user, expires in
//     10 days (KubeOperaCertificateExpiringSoon);
//   - ControlPlane in namespace badca: the brought router CA Secret holds no certificate, a
//     terminal reconcile error (KubeOperaReconcileErrors);
//   - a KubeOperaApp whose Tenant does not exist (KubeOperaAppsNotSynced);
//   - Git writes with a wrong password to a real Git server (KubeOperaGitPushesFailing).
//
// The ControlPlanes' Controller endpoint template is 127.0.0.1:{name}: each ControlPlane is named
// after the port of its Controller. No step waits for time to pass or counts passes: the
// simulated minutes start once each asserted state is in the metrics, and each minute's scrape
// follows a failure the test itself caused (a Git write, a spec change whose pass fails).
func TestAlertsFireOnARealRun(t *testing.T) {
	groups := loadRules(t)
	env := testenv.StartForTest(t, testenv.Options{})
	g := NewWithT(t)
	ctx := t.Context()

	controller := fake.NewServer() // accepts fake.DefaultUsername / fake.DefaultPassword only
	t.Cleanup(controller.Close)
	closedPort := closedPort(t)
	loginPort := portOf(t, controller.URL())

	opts := controllers.DefaultOptions()
	opts.MetricsBindAddress, opts.HealthProbeBindAddress = "0", "0"
	opts.Apps.GitCacheDir = t.TempDir()
	opts.ControlPlane.ControllerEndpointTemplate = "127.0.0.1:{name}"
	mgr, err := controllers.New(env.Config, opts)
	g.Expect(err).NotTo(HaveOccurred())
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	})

	nsUnreachable := namespace(t, env.Client, "unreachable")
	nsLogin := namespace(t, env.Client, "login")
	nsBadCA := namespace(t, env.Client, "badca")

	expiring := expiringCA(t, 10*24*time.Hour)
	g.Expect(env.Client.Create(ctx, tlsSecret(nsLogin, "router-site-ca", expiring))).To(Succeed())
	g.Expect(env.Client.Create(ctx, tlsSecret(nsBadCA, "router-site-ca", map[string][]byte{
		pki.TLSCertKey: []byte("not a certificate"), pki.TLSPrivateKeyKey: []byte("not a key"),
	}))).To(Succeed())
	g.Expect(env.Client.Create(ctx, controlPlane(nsUnreachable, closedPort, fake.DefaultPassword))).To(Succeed())
	g.Expect(env.Client.Create(ctx, controlPlane(nsLogin, loginPort, "wrong-password"))).To(Succeed())
	g.Expect(env.Client.Create(ctx, controlPlane(nsBadCA, "bad", fake.DefaultPassword))).To(Succeed())

	git, err := apptest.StartGitServer("git-user", "git-password")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(git.Stop)
	g.Expect(env.Client.Create(ctx, testfixture.KubeOperaApp(
		testfixture.AppInNamespace(nsUnreachable), testfixture.AppNamed("web"),
		testfixture.AppCloudSpace("no-such-cloud-space"), testfixture.AppTenant(""), testfixture.AppExampleWorkload("web"),
		testfixture.AppGitURL(git.URL("apps")),
	))).To(Succeed())
	writer := gitops.NewWriter(t.TempDir())
	badAuth, err := gitops.AuthFromSecretData(git.URL("apps"), map[string][]byte{
		"username": []byte("git-user"), "password": []byte("wrong"),
	})
	g.Expect(err).NotTo(HaveOccurred())

	// The ControlPlanes first go through deploying (Services, Deployments, the first Controller
	// calls), each at its own pace. The simulated minutes start only once every state the alerts
	// are asserted on holds, so that each alert's `for` is covered by the scrapes whatever the
	// timing of the run: the Controller of closedPort and "bad" unavailable, the login refused,
	// the brought CA's expiry exported, the app not synced.
	g.Eventually(func(g Gomega) {
		for _, ns := range []string{nsUnreachable, nsLogin, nsBadCA} {
			standInForCloudAndRollouts(t, env.Client, ns)
		}
		mfs, err := ctrlmetrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		for _, cp := range []struct{ ns, name, reason string }{
			{nsUnreachable, closedPort, datasancev3.ReasonControllerUnavailable},
			{nsBadCA, "bad", datasancev3.ReasonControllerUnavailable},
			{nsLogin, loginPort, datasancev3.ReasonLoginFailed},
		} {
			g.Expect(valueOf(mfs, metrics.ComponentReason, map[string]string{
				"controlplane_namespace": cp.ns, "controlplane": cp.name, "component": "controller", "reason": cp.reason,
			})).To(Equal(1.0), "ControlPlane %s/%s: controller component reason %s", cp.ns, cp.name, cp.reason)
		}
		g.Expect(valueOf(mfs, metrics.CertificateExpirationTime, map[string]string{
			"controlplane_namespace": nsLogin, "secret": "router-site-ca",
		})).To(BeNumerically(">", 0), "the brought CA's expiry is exported")
		g.Expect(valueOf(mfs, metrics.AppsNotSynced, nil)).To(BeNumerically(">", 0), "the app is counted as not synced")
	}, 60*time.Second, 100*time.Millisecond).Should(Succeed())

	// Each simulated minute is one deterministic round of failures: a Git write with a wrong
	// password, and a spec change of ControlPlane "bad" (whose brought router CA holds no
	// certificate) whose pass fails; the scrape is taken once that pass counted its error.
	store := teststorage.New(t)
	t0 := time.Now().Truncate(time.Minute)
	var lastScrape []*dto.MetricFamily
	errorsOf := func(mfs []*dto.MetricFamily) float64 {
		return valueOf(mfs, "controller_runtime_reconcile_errors_total", map[string]string{"controller": "controlplane"})
	}
	mfs, err := ctrlmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	lastErrors := errorsOf(mfs)
	for step := range steps {
		_, err := writer.Apply(ctx, gitops.Repo{URL: git.URL("apps"), Auth: badAuth},
			gitops.Change{AppKey: "ns/web", Owner: gitops.Owner{ID: "uid-web", Name: "ns/web"}, Path: "apps/ns/web",
				Files: map[string][]byte{"a.yaml": []byte("a: 1\n")}})
		g.Expect(err).To(MatchError(gitops.ErrAuthFailed))

		bad := &datasancev3.ControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: nsBadCA, Name: "bad"}}
		level := []string{"debug", "info"}[step%2]
		g.Expect(env.Client.Patch(ctx, bad, client.RawPatch(types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"controller":{"logLevel":%q}}}`, level)))).To(Succeed())

		// The new log level rolls the Controller's Deployment: the stand-in finishes that rollout
		// as the deployment controller would, so the Controller component is back at its REST
		// API (unreachable) when the minute is scraped, not waiting for its pods.
		g.Eventually(func(g Gomega) {
			standInForCloudAndRollouts(t, env.Client, nsBadCA)
			mfs, err = ctrlmetrics.Registry.Gather()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(errorsOf(mfs)).To(BeNumerically(">", lastErrors), "step %d: the pass of the changed ControlPlane failed", step)
			g.Expect(valueOf(mfs, metrics.ComponentReason, map[string]string{
				"controlplane_namespace": nsBadCA, "controlplane": "bad", "component": "controller", "reason": datasancev3.ReasonControllerUnavailable,
			})).To(Equal(1.0), "step %d: the Controller of ControlPlane bad is unreachable again", step)
		}, 30*time.Second, 50*time.Millisecond).Should(Succeed())
		lastErrors = errorsOf(mfs)
		appendSamples(t, store, mfs, t0.Add(time.Duration(step)*time.Minute))
		lastScrape = mfs
	}

	// Evaluate every alert once per simulated minute, as Prometheus would.
	engine := promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute,
	})
	query := rules.EngineQueryFunc(engine, store)
	fired := map[string][]labels.Labels{}
	var names []string
	for _, group := range groups.Groups {
		for _, r := range group.Rules {
			names = append(names, r.Alert)
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			g.Expect(err).NotTo(HaveOccurred(), r.Alert)
			rule := rules.NewAlertingRule(r.Alert, expr, time.Duration(r.For), 0,
				labels.FromMap(r.Labels), labels.FromMap(r.Annotations), labels.EmptyLabels(), "", true, nil)
			for step := range steps {
				_, err := rule.Eval(ctx, 0, t0.Add(time.Duration(step)*time.Minute), query, nil, 0)
				g.Expect(err).NotTo(HaveOccurred(), r.Alert)
				for _, a := range rule.ActiveAlerts() {
					if a.State == rules.StateFiring && !containsLabels(fired[r.Alert], a.Labels) {
						fired[r.Alert] = append(fired[r.Alert], a.Labels)
					}
				}
			}
		}
	}

	g.Expect(names).To(ConsistOf(
		"KubeOperaControllerUnreachable", "KubeOperaRegistrationFailing", "KubeOperaCertificateExpiringSoon",
		"KubeOperaGitPushesFailing", "KubeOperaAppsNotSynced", "KubeOperaReconcileErrors"),
		"a new alert needs a case in this test")
	for _, name := range names {
		g.Expect(fired).To(HaveKey(name), "alert %s never fired; metrics of the last scrape:\n%s", name, dump(t, store, t0))
	}
	// "bad" names no port, so its Controller cannot be reached either; the login ControlPlane's
	// Controller answers and must not be reported.
	g.Expect(valuesOf(fired["KubeOperaControllerUnreachable"], "controlplane")).To(ConsistOf(closedPort, "bad"),
		"only the ControlPlanes whose Controller does not answer")
	g.Expect(valuesOf(fired["KubeOperaRegistrationFailing"], "controlplane")).To(ConsistOf(loginPort))
	g.Expect(valuesOf(fired["KubeOperaRegistrationFailing"], "reason")).To(ConsistOf(datasancev3.ReasonLoginFailed))
	g.Expect(valuesOf(fired["KubeOperaCertificateExpiringSoon"], "controlplane_namespace")).To(ConsistOf(nsLogin),
		"only the brought CA expires within 30 days; generated certificates do not")
	g.Expect(valuesOf(fired["KubeOperaCertificateExpiringSoon"], "secret")).To(ConsistOf("router-site-ca"))
	g.Expect(valuesOf(fired["KubeOperaReconcileErrors"], "controller")).To(ContainElement("controlplane"))

	// The Grafana dashboard: every query names a metric this run exported.
	t.Run("dashboard", func(t *testing.T) { checkDashboard(t, seriesNames(lastScrape)) })
}

// loadRules parses the rule groups of the shipped PrometheusRule with Prometheus' rule parser.
func loadRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "prometheus", "prometheus_rule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil || obj.Kind != "PrometheusRule" {
		t.Fatalf("prometheus_rule.yaml is not a PrometheusRule: %v", err)
	}
	spec, err := yaml.Marshal(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, parser.NewParser(parser.Options{}), nil)
	if len(errs) > 0 {
		t.Fatalf("parse rules: %v", errs)
	}
	return groups
}

// appendSamples stores one scrape at ts, series named as Prometheus names them.
func appendSamples(t *testing.T, store storage.Appendable, mfs []*dto.MetricFamily, ts time.Time) {
	t.Helper()
	app := store.Appender(context.Background())
	ms := ts.UnixMilli()
	add := func(name string, lp []*dto.LabelPair, extra map[string]string, v float64) {
		b := labels.NewBuilder(labels.EmptyLabels()).Set(model.MetricNameLabel, name)
		for _, p := range lp {
			b.Set(p.GetName(), p.GetValue())
		}
		for k, val := range extra {
			b.Set(k, val)
		}
		if _, err := app.Append(0, b.Labels(), ms, v); err != nil {
			t.Fatalf("append %s: %v", name, err)
		}
	}
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			lp := m.GetLabel()
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				add(name, lp, nil, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, lp, nil, m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				add(name, lp, nil, m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", lp, map[string]string{"le": formatFloat(b.GetUpperBound())}, float64(b.GetCumulativeCount()))
				}
				add(name+"_bucket", lp, map[string]string{"le": "+Inf"}, float64(h.GetSampleCount()))
				add(name+"_sum", lp, nil, h.GetSampleSum())
				add(name+"_count", lp, nil, float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, lp, map[string]string{"quantile": formatFloat(q.GetQuantile())}, q.GetValue())
				}
				add(name+"_sum", lp, nil, s.GetSampleSum())
				add(name+"_count", lp, nil, float64(s.GetSampleCount()))
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}

func formatFloat(f float64) string {
	if math.IsInf(f, +1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// valueOf adds the values of the series of family name that carry every label of match.
func valueOf(mfs []*dto.MetricFamily, name string, match map[string]string) float64 {
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, p := range m.GetLabel() {
				got[p.GetName()] = p.GetValue()
			}
			for k, v := range match {
				if got[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return sum
}

// dump lists the kubeopera_ series of the last sample, for failure messages.
func dump(t *testing.T, store storage.Queryable, t0 time.Time) string {
	t.Helper()
	end := t0.Add((steps - 1) * time.Minute).UnixMilli()
	q, err := store.Querier(end, end)
	if err != nil {
		return err.Error()
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, "kubeopera_.*|controller_runtime_reconcile_errors_total"))
	var lines []string
	for ss.Next() {
		s := ss.At()
		it := s.Iterator(nil)
		for it.Next() != 0 {
			_, v := it.At()
			lines = append(lines, fmt.Sprintf("%s %g", s.Labels(), v))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func containsLabels(list []labels.Labels, l labels.Labels) bool {
	for _, x := range list {
		if labels.Equal(x, l) {
			return true
		}
	}
	return false
}

func valuesOf(list []labels.Labels, name string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range list {
		if v := l.Get(name); !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

func namespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	ns, err := apptest.Namespace(t.Context(), c, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// controlPlane is a ControlPlane named after its Controller's port, with NATS disabled.
func controlPlane(ns, name, password string) *datasancev3.ControlPlane {
	return testfixture.ControlPlane(testfixture.Named(name), testfixture.InNamespace(ns),
		testfixture.WithBootstrap(fake.DefaultUsername, password), testfixture.WithPostgres("db-secret-value"), testfixture.WithoutNATS())
}

func tlsSecret(ns, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Type:       corev1.SecretTypeTLS,
		Data:       data,
	}
}

// expiringCA is the data of a CA Secret whose certificate expires after validity.
func expiringCA(t *testing.T, validity time.Duration) map[string][]byte {
	t.Helper()
	kp, err := pki.GenerateCA("brought-router-ca", time.Now(), validity)
	if err != nil {
		t.Fatal(err)
	}
	return pki.SecretData(kp, nil)
}

// standInForCloudAndRollouts plays the cloud and the deployment controller of a cluster whose
// pods start: the LoadBalancer Services get addresses, and every Deployment of the namespace the
// status of a finished rollout of its current generation (the API server of this test runs no
// controllers), so the Controller component gets as far as the Controller's REST API.
func standInForCloudAndRollouts(t *testing.T, c client.Client, ns string) {
	t.Helper()
	var ds appsv1.DeploymentList
	if err := c.List(t.Context(), &ds, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range ds.Items {
		d := &ds.Items[i]
		n := int32(1)
		if d.Spec.Replicas != nil {
			n = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == n && d.Status.UpdatedReplicas == n {
			continue
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		if err := c.Status().Update(t.Context(), d); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"controller", "router"} {
		svc := &corev1.Service{}
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, svc); err != nil {
			continue
		}
		if svc.Spec.Type == corev1.ServiceTypeLoadBalancer && len(svc.Status.LoadBalancer.Ingress) == 0 {
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("203.0.113.%d", 10+i)}}
			if err := c.Status().Update(t.Context(), svc); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	_ = l.Close()
	return port
}

func portOf(t *testing.T, rawURL string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(rawURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return port
}
