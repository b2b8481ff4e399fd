package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/iofog"
	"github.com/kubeopera/kubeopera-operator/internal/iofog/fake"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
	"github.com/kubeopera/kubeopera-operator/test/sandbox"
	"github.com/kubeopera/kubeopera-operator/test/testbed"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

var (
	host       *testbed.Cluster
	kubeconfig string
	managerBin string
	// tenant is the vCluster stand-in of the KubeOperaApp trials (a second API server with the
	// Flux CRDs), tenantKubeconfig its exported kubeconfig, gitServer the apps' Git server.
	tenant           *testenv.Env
	tenantKubeconfig []byte
	gitServer        *apptest.GitServer
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testenv.MaySkipMissingTools() {
		fmt.Println("chaos: -short, skipped")
		return 0
	}
	dir, err := os.MkdirTemp("", "chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	host, err = testbed.Start(context.Background(), testbed.Options{Dir: filepath.Join(dir, "host")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL chaos: start the host cluster:", err)
		return 1
	}
	defer func() { _ = host.Stop() }()
	kc, err := host.Kubeconfig("chaos-operator")
	if err == nil {
		kubeconfig = filepath.Join(dir, "kubeconfig")
		err = os.WriteFile(kubeconfig, kc, 0o600)
	}
	if err == nil {
		managerBin, err = testenv.BuildManager(context.Background(), dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if code := startAppParts(); code >= 0 {
		return code
	}
	defer stopAppParts()
	// SIMULATED: load balancer and ingress controllers (see doc.go).
	cloud, err := sandbox.StartLocalCloud("host", host.Config, ctrl.Log.WithName("local-cloud"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = cloud.Stop() }()
	return m.Run()
}

// startAppParts starts what the KubeOperaApp trials add to the host: the tenant API server with
// the Flux CRDs and a flux-system namespace, the Git server and the Kustomization stand-in. It
// returns an exit code on failure, -1 on success.
func startAppParts() int {
	fluxDir, err := apptest.FluxDir()
	if err != nil {
		return apptest.ExitCode(err)
	}
	tenant, err = testenv.Start(testenv.Options{CRDDirs: []string{filepath.Join(fluxDir, "crds")}})
	if err == nil {
		tenantKubeconfig, err = tenant.Kubeconfig("vcluster-admin")
	}
	if err == nil {
		err = tenant.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: render.DefaultFluxNamespace}})
	}
	if err == nil {
		gitServer, err = apptest.StartGitServer("chaos", fmt.Sprintf("chaos-%d", time.Now().UnixNano()))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		stopAppParts()
		return 1
	}
	standInCtx, cancel := context.WithCancel(context.Background())
	stopStandIn = cancel
	go kustomizeStandIn(standInCtx)
	return -1
}

var stopStandIn context.CancelFunc = func() {}

func stopAppParts() {
	stopStandIn()
	if gitServer != nil {
		gitServer.StopHTTP()
		_ = os.RemoveAll(gitServer.Root())
	}
	_ = tenant.Stop()
}

// settings are the run's seed and trial count (CHAOS_SEED, CHAOS_TRIALS).
func settings(t *testing.T) (seed uint64, trials int) {
	t.Helper()
	seed = uint64(time.Now().UnixNano())
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED: %v", err)
		}
		seed = s
	}
	trials = 2
	if v := os.Getenv("CHAOS_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("CHAOS_TRIALS: %q is not a positive number", v)
		}
		trials = n
	}
	return seed, trials
}

// TestKillAnywhereControlPlane runs the ControlPlane scenarios (first install with NATS on, a
// spec change, the deletion) with the manager SIGKILLed at random moments of each.
func TestKillAnywhereControlPlane(t *testing.T) {
	runTrials(t, 0x6b696c6c, "", controlPlaneTrial)
}

// runTrials runs the CHAOS_TRIALS trials of a kill-anywhere scenario on the schedule of the
// seed (CHAOS_SEED) and the scenario's stream, stopping at the first failed trial; each trial
// returns how many SIGKILLs it survived. what names the trials in the summary ("app ", or "").
func runTrials(t *testing.T, stream uint64, what string, trial func(*testing.T, *rand.Rand, int) int) {
	t.Helper()
	seed, trials := settings(t)
	t.Logf("chaos seed %d, %d trials (reproduce: CHAOS_SEED=%d CHAOS_TRIALS=%d)", seed, trials, seed, trials)
	rng := rand.New(rand.NewPCG(seed, stream)) // a reproducible schedule, not a secret
	total := 0
	for i := range trials {
		total += trial(t, rng, i)
		if t.Failed() {
			t.Fatalf("trial %d failed (seed %d)", i, seed)
		}
	}
	t.Logf("chaos: %d %strials x 3 phases, %d SIGKILLs survived (seed %d)", trials, what, total, seed)
}

// newTrialGomega is the Gomega of one trial or outage test: waits of up to timeout, polled
// every poll.
func newTrialGomega(t *testing.T, timeout, poll time.Duration) Gomega {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(timeout)
	g.SetDefaultEventuallyPollingInterval(poll)
	return g
}

// trial is one ControlPlane's life under kills (or an app's: then c and fake are not set).
type trial struct {
	t   *testing.T
	g   Gomega
	ctx context.Context
	// c is the client of the API server the ControlPlane is in.
	c      client.Client
	ns     string
	fake   *fake.Server
	dir    string
	args   []string
	mgr    *testenv.Process
	kills  int
	secret *secretWatch
}

func controlPlaneTrial(t *testing.T, rng *rand.Rand, i int) (kills int) {
	ctx := t.Context()
	g := newTrialGomega(t, 3*time.Minute, 200*time.Millisecond)
	ns := fmt.Sprintf("chaos-cp-%d", i)
	password := fmt.Sprintf("bootstrap-%d-%d", i, rng.Uint64())
	cp, f := sampleWithController(g, ns, password, host.Client)
	defer f.Close()
	tr := &trial{t: t, g: g, ctx: ctx, c: host.Client, ns: ns, fake: f, dir: t.TempDir(),
		args: controlPlaneArgs(f.URL(), "--zap-log-level=debug")}
	defer tr.stop()

	tr.secret = watchKeySecrets(ctx, ns, createCredentials(ctx, g, host.Client, cp, password)...)
	defer tr.secret.stop()

	// Phase 1: first install, NATS on.
	g.Expect(host.Client.Create(ctx, cp)).To(Succeed())
	tr.underKills(rng, "install")
	tr.expectReady()

	// Phase 2: a spec change (Controller log level and replicas, NATS replicas: the sample's 3 to
	// 5, which re-issues the NATS server certificates for the new SANs).
	tr.mutate(func(cp *datasancev3.ControlPlane) {
		cp.Spec.Controller.LogLevel = "debug"
		cp.Spec.Replicas.Controller = 3
		cp.Spec.Replicas.Nats = new(int32(5))
	})
	tr.underKills(rng, "change")
	tr.expectReady()
	tr.expectSingleCAImports()

	// Phase 3: the deletion.
	tr.secret.stop()
	g.Expect(host.Client.Delete(ctx, cp)).To(Succeed())
	tr.underKills(rng, "delete")
	g.Eventually(func() bool {
		g.Expect(tr.mgr.Exited()).To(Succeed())
		err := host.Client.Get(ctx, client.ObjectKeyFromObject(cp), &datasancev3.ControlPlane{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue(), "the ControlPlane is gone: its finalizer was removed (manager log %s)", tr.mgr.Log)
	tr.expectSingleCAImports()
	g.Expect(tr.secret.violations()).To(BeEmpty(), "no key or certificate Secret regenerated")
	return tr.kills
}

// underKills starts the manager and SIGKILLs it 1 to 3 times at random moments of the phase,
// then leaves a fresh process running.
func (tr *trial) underKills(rng *rand.Rand, phase string) {
	tr.t.Helper()
	n := 1 + rng.IntN(3)
	for k := range n {
		tr.start()
		delay := time.Duration(rng.Int64N(int64(4 * time.Second)))
		tr.t.Logf("%s %s: kill %d/%d after %v", tr.ns, phase, k+1, n, delay.Round(time.Millisecond))
		select {
		case <-time.After(delay): // the fault's moment, chosen by the random seed; not a synchronisation
		case <-tr.ctx.Done():
			return
		}
		tr.g.Expect(tr.mgr.Exited()).To(Succeed())
		tr.mgr.Kill()
		tr.kills++
	}
	tr.start()
}

func (tr *trial) start() {
	tr.t.Helper()
	if tr.mgr != nil {
		tr.mgr.Kill()
	}
	m, err := StartManager(managerBin, kubeconfig, filepath.Join(tr.dir, "manager.log"), tr.args...)
	tr.g.Expect(err).NotTo(HaveOccurred())
	tr.mgr = m
}

func (tr *trial) stop() {
	if tr.mgr != nil {
		tr.mgr.Kill()
	}
	tr.g.Expect(testenv.RaceReport(filepath.Join(tr.dir, "manager.log"))).To(BeEmpty(), "the manager's race detector reported")
	if tr.t.Failed() {
		if b, err := os.ReadFile(filepath.Join(tr.dir, "manager.log")); err == nil {
			lines := strings.Split(string(b), "\n")
			tr.t.Logf("last manager log lines:\n%s", strings.Join(lines[max(0, len(lines)-60):], "\n"))
		}
	}
}

func (tr *trial) key() types.NamespacedName {
	return types.NamespacedName{Namespace: tr.ns, Name: "pot"}
}

func (tr *trial) mutate(fn func(*datasancev3.ControlPlane)) {
	tr.t.Helper()
	tr.g.Eventually(func() error {
		cp := &datasancev3.ControlPlane{}
		if err := tr.c.Get(tr.ctx, tr.key(), cp); err != nil {
			return err
		}
		fn(cp)
		return tr.c.Update(tr.ctx, cp)
	}).Should(Succeed())
}

// expectReady waits for the ready condition of the current generation, and checks the watched
// Secrets on the way.
func (tr *trial) expectReady() {
	tr.t.Helper()
	tr.waitReady()
	tr.g.Expect(tr.secret.violations()).To(BeEmpty(), "no key or certificate Secret regenerated")
	tr.g.Expect(tr.secret.count()).To(BeNumerically(">", 0), "the watch saw the key Secrets (it can fail)")
}

// waitReady waits, while the manager runs, for the ready condition of the ControlPlane's current
// generation.
func (tr *trial) waitReady() {
	tr.t.Helper()
	tr.g.Eventually(func(g Gomega) {
		g.Expect(tr.mgr.Exited()).To(Succeed())
		cp := &datasancev3.ControlPlane{}
		g.Expect(tr.c.Get(tr.ctx, tr.key(), cp)).To(Succeed())
		c := apimeta.FindStatusCondition(cp.Status.Conditions, datasancev3.ConditionReady)
		g.Expect(c).NotTo(BeNil(), "conditions: %+v", cp.Status.Conditions)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "conditions: %+v", cp.Status.Conditions)
		g.Expect(c.ObservedGeneration).To(Equal(cp.Generation))
	}).Should(Succeed(), "%s reaches ready (manager log %s)", tr.ns, tr.mgr.Log)
}

// expectSingleCAImports checks that every CA the fake holds was imported by exactly one POST, and
// that no POST named a CA twice.
func (tr *trial) expectSingleCAImports() {
	tr.t.Helper()
	posts := map[string]int{}
	for _, r := range tr.fake.RequestsTo("POST", "/api/v3/certificates/ca") {
		var req iofog.CARequest
		tr.g.Expect(json.Unmarshal(r.Body, &req)).To(Succeed())
		posts[req.Name]++
	}
	imported := tr.fake.ImportedCAs()
	tr.g.Expect(imported).NotTo(BeEmpty(), "the ControlPlane imports its CAs")
	for _, name := range imported {
		tr.g.Expect(posts).To(HaveKeyWithValue(name, 1), "CA %s imported exactly once", name)
	}
	tr.g.Expect(posts).To(HaveLen(len(imported)), "no POST for a CA the fake does not hold: %v", posts)
}

// sampleWithController is what every ControlPlane test of this package starts from: the sample
// ControlPlane (testfixture.Sample: NATS on, router and NATS LoadBalancer Services, the
// Controller behind an Ingress, the bootstrap password in a Secret) in namespace ns, and a fake
// Controller that accepts its bootstrap user with password and reads the Secrets of a
// k8s-secret CA import from ns through secrets (the API server the operator writes them to).
// The caller closes the fake.
func sampleWithController(g Gomega, ns, password string, secrets client.Reader) (*datasancev3.ControlPlane, *fake.Server) {
	cp, err := testfixture.Sample(testfixture.InNamespace(ns))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cp.Spec.Nats).NotTo(BeNil())
	g.Expect(cp.Spec.Nats.Enabled).To(HaveValue(BeTrue()), "the sample has NATS on")
	g.Expect(cp.Spec.Auth.Bootstrap.PasswordSecretRef).NotTo(BeNil())
	return cp, fake.NewServer(fake.WithCredentials(cp.Spec.Auth.Bootstrap.Username, password),
		fake.WithSecretReader(fake.KubernetesSecrets(secrets, ns)))
}

// controlPlaneArgs are the manager flags of the ControlPlane tests: no metrics or probe
// listener, only the ControlPlane controller, the Controller API at endpoint (a URL or
// host:port), then extra.
func controlPlaneArgs(endpoint string, extra ...string) []string {
	return append([]string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--enable-app-controller=false",
		"--controller-endpoint-template=" + hostPort(endpoint),
	}, extra...)
}

// hostPort is the host:port of addr, a URL or already a host:port.
func hostPort(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.Host != "" {
		return u.Host
	}
	return addr
}

// createCredentials creates the ControlPlane's namespace and the Secrets its credential
// references name (the bootstrap password the fake accepts; any value for the others, which the
// fake never checks) and returns their names.
func createCredentials(ctx context.Context, g Gomega, c client.Client, cp *datasancev3.ControlPlane, password string) []string {
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cp.Namespace}})).To(Succeed())
	var names []string
	for _, s := range testfixture.CredentialSecrets(cp, password) {
		g.Expect(c.Create(ctx, s)).To(Succeed())
		names = append(names, s.Name)
	}
	return names
}

// natsReplicasAnnotation is the replica count a NATS server certificate's SANs were made for
// (controllers/controlplane, annotationNatsReplicas).
const natsReplicasAnnotation = "datasance.com/nats-replicas"

// secretWatch polls the Secrets of a namespace and remembers the UID and data digest of each
// Secret holding key material; a later different UID or digest is a regeneration.
type secretWatch struct {
	mu     sync.Mutex
	seen   map[string]string
	bad    []string
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func watchKeySecrets(ctx context.Context, ns string, skip ...string) *secretWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &secretWatch{seen: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			list := &corev1.SecretList{}
			if err := host.Client.List(ctx, list, client.InNamespace(ns)); err == nil {
				w.observe(list.Items, skip)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond): // sampling period of the watch
			}
		}
	}()
	return w
}

func (w *secretWatch) observe(items []corev1.Secret, skip []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range items {
		if !holdsKeys(s) || slices.Contains(skip, s.Name) {
			continue
		}
		h := sha256.New()
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			_, _ = fmt.Fprintf(h, "%s=%x;", k, s.Data[k])
		}
		id := string(s.UID) + "/" + fmt.Sprintf("%x", h.Sum(nil))
		// A NATS server certificate is re-issued by design when the replica count (its SANs)
		// changes; the replica count it was made for is part of its identity here.
		name := s.Name
		if r, ok := s.Annotations[natsReplicasAnnotation]; ok {
			name += "@replicas=" + r
		}
		if old, ok := w.seen[name]; ok && old != id {
			w.bad = append(w.bad, fmt.Sprintf("Secret %s changed: %s -> %s", name, old, id))
		}
		w.seen[name] = id
	}
}

// holdsKeys: a TLS Secret, or one with a key, seed or credentials entry (CA, NATS operator and
// account keys).
func holdsKeys(s corev1.Secret) bool {
	if s.Type == corev1.SecretTypeTLS {
		return true
	}
	for k := range s.Data {
		l := strings.ToLower(k)
		if strings.Contains(l, "key") || strings.Contains(l, "seed") || strings.HasSuffix(l, ".creds") || strings.HasSuffix(l, ".jwt") {
			return true
		}
	}
	return false
}

func (w *secretWatch) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

func (w *secretWatch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

func (w *secretWatch) stop() {
	w.once.Do(func() {
		w.cancel()
		<-w.done
	})
}
