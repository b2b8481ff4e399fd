package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/test/e2e"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// bench holds what the phases share: the work directory, the operator binary, the Git side and
// the figures so far.
type bench struct {
	m     sizes
	work  string
	bin   string
	git   *gitSide
	flux  string // Flux binaries and CRDs
	figs  []Figure
	phase int
}

func run(ctx context.Context, m sizes, only string) (Result, error) {
	started, rev, loadStart := time.Now(), commit(), loadAverage()
	work, err := os.MkdirTemp("", "kubeopera-bench-")
	if err != nil {
		return Result{}, err
	}
	defer func() {
		if keepWork {
			progress("kept the work directory (operator logs): %s", work)
			return
		}
		_ = os.RemoveAll(work)
	}()
	b := &bench{m: m, work: work}
	if b.flux, err = apptest.FluxDir(); err != nil {
		return Result{}, err
	}
	if _, err := os.Stat(filepath.Join(testenv.AssetsDir(), "kube-apiserver")); err != nil {
		return Result{}, fmt.Errorf("envtest binaries missing (run `make envtest-assets`): %w", err)
	}
	if b.bin = operatorBin; b.bin == "" {
		progress("building the operator from main.go")
		if b.bin, err = buildOperator(ctx, work); err != nil {
			return Result{}, err
		}
	}
	srv, err := apptest.StartGitServer("git", "bench-s3cr3t")
	if err != nil {
		return Result{}, err
	}
	defer srv.Stop()
	proxy, err := startGitProxy(srv.HTTPAddress())
	if err != nil {
		return Result{}, err
	}
	defer proxy.close()
	b.git = &gitSide{srv: srv, proxy: proxy}

	phases := []struct {
		name string
		f    func(context.Context) error
	}{
		{"latency", b.latencyAndSteadyState},
		{"scale", b.scale},
		{"memory", b.memory},
		{"git", b.gitThroughput},
		{"tenants", b.tenantScale},
		{"branch", b.sharedBranch},
	}
	for _, p := range phases {
		if only != "" && !slices.Contains(strings.Split(only, ","), p.name) {
			continue
		}
		progress("phase %s", p.name)
		if err := p.f(ctx); err != nil {
			progress("phase %s failed: %v", p.name, err)
			b.failed(p.name, err)
		}
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
	}
	return Result{
		Mode: m.name, Commit: rev, Machine: machine(), Started: started.UTC(),
		Duration: time.Since(started).Round(time.Second), Figures: b.figs,
		Load: fmt.Sprintf("1-minute load average %s at the start, %s at the end", loadStart, loadAverage()),
	}, nil
}

// failed records a phase that could not finish: the figures it did not reach are listed as not
// measured, with the error.
func (b *bench) failed(phase string, err error) {
	b.figs = append(b.figs, Figure{ID: phase, What: "phase did not finish", Goal: goalNone, Err: err.Error()})
}

func (b *bench) add(f Figure) {
	b.figs = append(b.figs, f)
	progress("  %s: %s %s", f.ID, num(f.Value), f.Unit)
}

// env is one fresh host API server with the operator running against it.
type env struct {
	host *cluster
	net  *controllerNet
	cl   *cloud
	op   *operator
	dir  string
	kc   string
	stop func()
}

// newEnv starts a host API server, the Controller network, the cloud stand-in and the operator
// as user kubeopera-operator.
func (b *bench) newEnv(ctx context.Context, name string) (*env, error) {
	b.phase++
	dir := filepath.Join(b.work, fmt.Sprintf("%02d-%s", b.phase, name))
	host, err := startCluster(dir, "host", apptest.HostCRDDirs(false))
	if err != nil {
		return nil, err
	}
	e := &env{host: host, dir: dir}
	var stops []func()
	e.stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	stops = append(stops, func() { _ = host.Stop() })
	if e.net, err = startControllerNet(host.Client); err != nil {
		e.stop()
		return nil, err
	}
	stops = append(stops, e.net.close)
	cctx, cancel := context.WithCancel(ctx)
	stops = append(stops, cancel)
	if e.cl, err = startCloud(cctx, host.Config, e.net); err != nil {
		e.stop()
		return nil, err
	}
	if e.kc, _, err = host.kubeconfigFile(dir, operatorUser); err != nil {
		e.stop()
		return nil, err
	}
	stops = append(stops, func() { e.op.stop() })
	if err := b.startOperator(ctx, e); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func (b *bench) startOperator(ctx context.Context, e *env) error {
	op, err := startOperator(ctx, b.bin, e.kc, filepath.Join(e.dir, fmt.Sprintf("operator-%d", time.Now().UnixNano())), e.net.url)
	if err != nil {
		return err
	}
	e.op = op
	b.git.proxy.opPid.Store(int64(op.pid()))
	return nil
}

// latencyAndSteadyState is P1 and P2: one host with the operator, a tenant API server with the
// real Flux controllers, the Git server.
func (b *bench) latencyAndSteadyState(ctx context.Context) error {
	e, err := b.newEnv(ctx, "latency")
	if err != nil {
		return err
	}
	defer e.stop()
	tenant, err := startCluster(e.dir, "tenant", []string{filepath.Join(b.flux, "crds")})
	if err != nil {
		return err
	}
	defer func() { _ = tenant.Stop() }()
	if err := tenant.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}); err != nil {
		return err
	}
	fluxKC, _, err := tenant.kubeconfigFile(e.dir, "flux")
	if err != nil {
		return err
	}
	flux, err := e2e.StartFlux(ctx, b.flux, fluxKC, e.dir)
	if err != nil {
		return err
	}
	defer flux.Stop() // before the tenant API server stops (deferred earlier, runs later)
	wctx, stopWorkloads := context.WithCancel(ctx)
	defer stopWorkloads()
	if _, err := startTenantWorkloads(wctx, tenant.Config); err != nil {
		return err
	}

	// P1 floor, then ControlPlanes.
	rtt, err := watchRoundTrip(ctx, e.host, b.m.runs)
	if err != nil {
		return fmt.Errorf("watch round trip: %w", err)
	}
	lat, err := readinessLatency(ctx, e.host, e.cl, b.m.runs)
	if err != nil {
		return fmt.Errorf("ControlPlane readiness: %w", err)
	}
	b.add(Figure{ID: "P1.cp.median", What: fmt.Sprintf("ControlPlane last dependency → Ready, median of %d", len(lat)),
		Unit: "ms", Value: median(lat), Floor: floorOf(median(rtt)), FloorWhat: "watch round trip", Goal: goalMax, Limit: 500})
	b.add(Figure{ID: "P1.cp.p95", What: fmt.Sprintf("ControlPlane last dependency → Ready, p95 of %d", len(lat)),
		Unit: "ms", Value: quantile(lat, 0.95), Floor: floorOf(quantile(rtt, 0.95)), FloorWhat: "watch round trip", Goal: goalNone})

	// P1 for apps.
	_, tenantKC, err := tenant.kubeconfigFile(e.dir, vclusterUser)
	if err != nil {
		return err
	}
	const appsNS = "apps-latency"
	if err := setupTenantNamespace(ctx, e.host, appsNS, tenantKC, b.git); err != nil {
		return err
	}
	w, err := startAppWatch(ctx, e.host.Config, tenant.Config)
	if err != nil {
		return err
	}
	created, synced, applied, raw, err := appLatency(ctx, e.host, tenant.Client, b.git, w, appsNS, b.m.runs)
	if len(created) > 0 {
		b.add(Figure{ID: "P1.app.pushed", What: fmt.Sprintf("app create → manifests pushed, median of %d", len(created)),
			Unit: "ms", Value: median(created), Floor: floorOf(median(raw)), FloorWhat: "raw go-git commit+push", Goal: goalMax, Limit: 1000})
	}
	if len(synced) > 0 {
		b.add(Figure{ID: "P1.app.synced", What: fmt.Sprintf("app push → Synced, median of %d (Flux reconciles on push)", len(synced)),
			Unit: "ms", Value: median(synced), Floor: floorOf(median(applied)), FloorWhat: "Flux applied the commit", Goal: goalOverFloor, Limit: 1000,
			Note: "The operator does not watch the vCluster's Kustomization: it reads it back every --app-sync-poll-interval " +
				"(15 s by default), so Synced trails Flux's apply by up to that interval."})
	}
	if err != nil {
		return fmt.Errorf("app latency: %w", err)
	}

	// P2: everything above is unchanged and ready now.
	return b.steadyState(ctx, e, tenant)
}

// steadyState is P2: a window in which nothing changes (the P1 ControlPlanes, NATS on, and the
// P1 apps, Synced).
func (b *bench) steadyState(ctx context.Context, e *env, tenant *cluster) error {
	hostBefore, err := e.host.writes(operatorUser)
	if err != nil {
		return err
	}
	tenantBefore, err := tenant.writes(vclusterUser)
	if err != nil {
		return err
	}
	// The counts must be able to show writes: the operator wrote while setting everything up.
	if _, n := diff(nil, hostBefore); n == 0 {
		return errors.New("the host audit log holds no write of user " + operatorUser + ": write attribution is broken")
	}
	if _, n := diff(nil, tenantBefore); n == 0 {
		return errors.New("the vCluster audit log holds no write of user " + vclusterUser + ": write attribution is broken")
	}
	callsBefore := e.net.calls()
	if callsBefore == 0 {
		return errors.New("the fake Controllers recorded no call: request attribution is broken")
	}
	start := time.Now()
	select {
	case <-time.After(b.m.window): // the measured window itself
	case <-ctx.Done():
		return ctx.Err()
	}
	hostAfter, err := e.host.writes(operatorUser)
	if err != nil {
		return err
	}
	tenantAfter, err := tenant.writes(vclusterUser)
	if err != nil {
		return err
	}
	events, _ := b.git.proxy.snapshot()
	fetches, pushes := countGit(events, start)
	hostDiff, hostN := diff(hostBefore, hostAfter)
	tenantDiff, tenantN := diff(tenantBefore, tenantAfter)
	what := fmt.Sprintf("%s steady state, %d ready ControlPlanes (NATS on) + %d Synced apps", b.m.window, b.m.runs, b.m.runs)
	zero := floorOf(0)
	b.add(Figure{ID: "P2.host-writes", What: what + ": writes to the host API server", Unit: "writes", Value: float64(hostN),
		Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0, Note: breakdown(hostDiff)})
	b.add(Figure{ID: "P2.tenant-writes", What: what + ": writes to the vCluster API server", Unit: "writes", Value: float64(tenantN),
		Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0, Note: breakdown(tenantDiff)})
	b.add(Figure{ID: "P2.controller-calls", What: what + ": Controller API calls other than /status", Unit: "calls",
		Value: float64(e.net.calls() - callsBefore), Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0})
	b.add(Figure{ID: "P2.git-pushes", What: what + ": Git pushes", Unit: "pushes", Value: float64(pushes),
		Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0})
	b.add(Figure{ID: "P2.git-fetches", What: what + ": Git fetches by the operator", Unit: "fetches", Value: float64(fetches),
		Floor: zero, FloorWhat: "nothing changed", Goal: goalNone})
	return nil
}

// breakdown lists writes by verb and resource, largest first.
func breakdown(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", m[k], k))
	}
	return "Writes in the window: " + strings.Join(parts, ", ") + "."
}

// scale is P3 at two sizes: each on a fresh host and a fresh operator process.
func (b *bench) scale(ctx context.Context) error {
	var perCP, perFloor [2]float64
	for i, n := range b.m.cps {
		e, err := b.newEnv(ctx, fmt.Sprintf("scale-%d", n))
		if err != nil {
			return err
		}
		wall, err := scaleRun(ctx, e.host, e.cl, "p3", n)
		if err != nil {
			e.stop()
			return fmt.Errorf("%d ControlPlanes: %w", n, err)
		}
		_, peak, err := e.op.memory()
		if err != nil {
			e.stop()
			return err
		}
		anon, file, err := e.op.rssParts()
		if err != nil {
			e.stop()
			return err
		}
		if heapProfileDir != "" {
			if err := e.op.heapProfile(ctx, filepath.Join(heapProfileDir, fmt.Sprintf("heap-scale-%d.pb.gz", n))); err != nil {
				e.stop()
				return err
			}
		}
		e.op.stop()
		goal, err := rssGoal(n)
		if err != nil {
			e.stop()
			return err
		}
		b.add(Figure{ID: fmt.Sprintf("P3.rss-%d", n),
			What: fmt.Sprintf("operator peak RSS during %d ControlPlanes (at the end %.0f MiB anonymous + %.0f MiB file-backed code pages)", n, anon, file),
			Unit: "MiB", Value: peak, Goal: goalMax, Limit: goal})
		create, keys, nKeys, err := scaleFloor(ctx, e.host, "p3", n)
		e.stop()
		fig := Figure{ID: fmt.Sprintf("P3.cp-%d", n), What: fmt.Sprintf("%d ControlPlanes in %d namespaces to Ready, wall time", n, n),
			Unit: "s", Value: wall.Seconds(), Goal: goalRatio, Limit: 1.5}
		if err != nil {
			fig.Err = fmt.Sprintf("wall time %.1f s, but the floor failed: %v", wall.Seconds(), err)
			b.add(fig)
			return fmt.Errorf("floor of %d ControlPlanes: %w", n, err)
		}
		floor := create + keys
		fig.Floor = floorOf(floor.Seconds())
		fig.FloorWhat = fmt.Sprintf("bare client %.1f s + %d RSA keys %.1f s", create.Seconds(), nKeys, keys.Seconds())
		b.add(fig)
		perCP[i], perFloor[i] = wall.Seconds()/float64(n), floor.Seconds()/float64(n)
	}
	b.add(Figure{ID: "P3.growth", What: fmt.Sprintf("time per ControlPlane at %d ÷ at %d", b.m.cps[1], b.m.cps[0]),
		Unit: "×", Value: perCP[1] / perCP[0], Floor: floorOf(perFloor[1] / perFloor[0]), FloorWhat: "same for the floor", Goal: goalNone})
	return nil
}

// rssGoal is P3's goal for the operator's peak RSS with n ControlPlanes, in MiB: 100 up to 25
// ControlPlanes, and at 100 the memory request of the operator's Deployment
// (config/manager/manager.yaml), what the scheduler reserves for it. The first goal was 100 at
// 100; docs/benchmarks.md ("P3 memory goal") shows with profiles why that counts the binary's
// code pages and what 100 would cost.
func rssGoal(n int) (float64, error) {
	if n <= 25 {
		return 100, nil
	}
	return managerMemoryRequest()
}

// managerMemoryRequest reads the manager container's memory request, in MiB, from the shipped
// Deployment.
func managerMemoryRequest() (float64, error) {
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "manager", "manager.yaml"))
	if err != nil {
		return 0, err
	}
	for doc := range strings.SplitSeq(string(data), "\n---") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &d); err != nil || d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok && c.Name == "manager" {
				return float64(q.Value()) / (1 << 20), nil
			}
		}
	}
	return 0, errors.New("config/manager/manager.yaml: no memory request of container manager")
}

// memory is the rest of P3: the operator's settled RSS in an empty cluster, then with unrelated
// Secrets and ConfigMaps present.
func (b *bench) memory(ctx context.Context) error {
	e, err := b.newEnv(ctx, "memory")
	if err != nil {
		return err
	}
	defer e.stop()
	base, err := e.op.settledRSS()
	if err != nil {
		return err
	}
	e.op.stop()
	progress("  creating %d Secrets and %d ConfigMaps", b.m.unrelated, b.m.unrelated)
	if err := unrelatedObjects(ctx, e.host.Client, b.m.unrelated); err != nil {
		return err
	}
	if err := b.startOperator(ctx, e); err != nil {
		return err
	}
	with, err := e.op.settledRSS()
	if err != nil {
		return err
	}
	b.add(Figure{ID: "P3.rss-unrelated", What: fmt.Sprintf("operator RSS with %d unrelated Secrets + %d ConfigMaps", b.m.unrelated, b.m.unrelated),
		Unit: "MiB", Value: with, Floor: floorOf(base), FloorWhat: "RSS without them", Goal: goalOverFloor, Limit: 10})
	return nil
}

// gitThroughput is P4: each case on a fresh host and operator; one tenant API server (Flux's CRDs,
// no Flux: P4 measures the Git side).
func (b *bench) gitThroughput(ctx context.Context) error {
	dir := filepath.Join(b.work, "git-tenant")
	tenant, err := startCluster(dir, "tenant", []string{filepath.Join(b.flux, "crds")})
	if err != nil {
		return err
	}
	defer func() { _ = tenant.Stop() }()
	if err := tenant.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}); err != nil {
		return err
	}
	_, tenantKC, err := tenant.kubeconfigFile(dir, vclusterUser)
	if err != nil {
		return err
	}
	cases := []struct {
		label    string
		n, repos int
	}{
		{fmt.Sprintf("%d", b.m.apps[0]), b.m.apps[0], 1},
		{fmt.Sprintf("%d", b.m.apps[1]), b.m.apps[1], 1},
		{fmt.Sprintf("%dx%d", b.m.spreadApps, b.m.spreadRepos), b.m.spreadApps, b.m.spreadRepos},
	}
	var perApp, perFloor [2]float64
	var errs []error
	for i, c := range cases {
		r, err := b.gitCase(ctx, tenantKC, c.label, c.n, c.repos)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.label, err))
			continue
		}
		where := "one repository"
		pushLimit := 20.0
		if c.repos > 1 {
			where = fmt.Sprintf("%d repositories", c.repos)
			pushLimit = 20 * float64(c.repos) / 10
		}
		id := "P4." + c.label
		b.add(Figure{ID: id + ".wall", What: fmt.Sprintf("%d apps at once, %s: wall time until all pushed", c.n, where),
			Unit: "s", Value: r.wall.Seconds(), Floor: floorOf(r.floor.Seconds()),
			FloorWhat: fmt.Sprintf("bare client %.2f s + raw push of the same files %.2f s", r.apiFloor.Seconds(), r.gitFloor.Seconds()),
			Goal:      goalRatio, Limit: 2})
		b.add(Figure{ID: id + ".pushes", What: fmt.Sprintf("%d apps, %s: pushes (%d commits on the branch)", c.n, where, r.commits),
			Unit: "pushes", Value: float64(r.pushes), Floor: floorOf(float64(c.repos)), FloorWhat: "one per repository", Goal: goalMax, Limit: pushLimit})
		b.add(Figure{ID: id + ".files", What: fmt.Sprintf("%d apps, %s: lost + stray files (%d lost, %d stray)", c.n, where, r.missing, r.extra),
			Unit: "files", Value: float64(r.missing + r.extra), Goal: goalMax, Limit: 0})
		if i < 2 {
			perApp[i], perFloor[i] = r.wall.Seconds()/float64(c.n), r.floor.Seconds()/float64(c.n)
		}
	}
	if perApp[0] > 0 && perApp[1] > 0 {
		b.add(Figure{ID: "P4.growth", What: fmt.Sprintf("time per app at %d ÷ at %d (one repository)", b.m.apps[1], b.m.apps[0]),
			Unit: "×", Value: perApp[1] / perApp[0], Floor: floorOf(perFloor[1] / perFloor[0]), FloorWhat: "same for the floor", Goal: goalNone})
	}
	return errors.Join(errs...)
}

func (b *bench) gitCase(ctx context.Context, tenantKC []byte, label string, n, repos int) (gitRun, error) {
	e, err := b.newEnv(ctx, "git-"+label)
	if err != nil {
		return gitRun{}, err
	}
	defer e.stop()
	ns := "p4-" + label
	if err := setupTenantNamespace(ctx, e.host, ns, tenantKC, b.git); err != nil {
		return gitRun{}, err
	}
	if heapProfileDir == "" {
		return gitThroughput(ctx, e.host, b.git, ns, label, n, repos)
	}
	// With -heap-profile, the operator's CPU profile of the case's first seconds (its pushes
	// end within them) goes beside the heap profiles.
	profiled := make(chan error, 1)
	go func() {
		profiled <- e.op.cpuProfile(ctx, gitCPUProfile, filepath.Join(heapProfileDir, "cpu-git-"+label+".pb.gz"))
	}()
	run, err := gitThroughput(ctx, e.host, b.git, ns, label, n, repos)
	if perr := <-profiled; perr != nil {
		progress("  CPU profile of P4.%s: %v", label, perr)
	}
	return run, err
}

// gitCPUProfile is how long -heap-profile profiles the operator's CPU in each P4 case.
const gitCPUProfile = 10 * time.Second
