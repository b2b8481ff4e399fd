package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// sharedBranch is P6: what one push into a branch shared by many Synced apps costs. The apps
// (b.m.branchApps, one Tenant, one repository and branch, Flux played by fluxPlayer as in P5)
// are created and waited for until all are Synced and the operator is quiet; then two pushes
// are measured, each from the push until every Kustomization applied the new head and the
// operator is quiet again:
//
//   - "own": one app's image changes, the operator commits and pushes its folder;
//   - "outside": someone else pushes a commit that changes only a README at the repository's
//     root, and Flux is told of the push as a Receiver would be.
//
// For each it counts the operator's app reconciles (controller-runtime's metric), the writes
// of KubeOperaApp status to the host API server (audit log), the apps whose object was written
// other than the changed one (informer), its Git fetches and pushes (the Git proxy), its vCluster
// requests (the API proxy) and the Kustomization reconciles Flux made (played). The floors are
// the work the push requires: for its own push, the changed app's two passes (one commits, one
// sees the revision applied), one status write (the app Synced at its new generation) and no
// fetch (the operator made the head itself); for the outside push, no pass and no status write
// (no app's folder changed) and one fetch (someone must read the new commit to know that).
func (b *bench) sharedBranch(ctx context.Context) error {
	n := b.m.branchApps
	b.phase++
	dir := filepath.Join(b.work, fmt.Sprintf("%02d-branch", b.phase))
	pc, err := b.startProxiedClusters(ctx, dir, "vcluster")
	if err != nil {
		return err
	}
	defer pc.stop()
	host, vc, hostProxy := pc.host, pc.vcs, pc.hostProxy
	vcUp, err := vc.adminConfig(vclusterUser)
	if err != nil {
		return err
	}
	// One Tenant: its vCluster holds only its own objects, no scoping needed.
	vcProxy, err := startAPIProxy("vc", vcUp, pc.ca, nil)
	if err != nil {
		return err
	}
	defer vcProxy.close()
	tenantKC, err := vcProxy.kubeconfig(pc.ca)
	if err != nil {
		return err
	}
	if err := setupTenantNamespace(ctx, host, p6Namespace, tenantKC, b.git); err != nil {
		return err
	}
	netw, err := startControllerNet(host.Client)
	if err != nil {
		return err
	}
	defer netw.close()
	metricsAddr, err := testenv.FreeAddr()
	if err != nil {
		return err
	}
	op, err := startOperatorWith(ctx, b.bin, pc.opKCPath, filepath.Join(dir, "operator"), netw.url, []string{
		"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false",
	})
	if err != nil {
		return err
	}
	defer op.stop()
	b.git.proxy.opPid.Store(int64(op.pid()))
	defer b.git.proxy.opPid.Store(0)

	pctx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()
	// Flux reconciles on pushes only: its played interval is longer than the phase.
	player, err := startFluxPlayer(pctx, vc.Config, b.git, time.Hour)
	if err != nil {
		return err
	}
	aw, err := startAppWatch(pctx, host.Config, vc.Config)
	if err != nil {
		return err
	}
	m := &branchMeter{b: b, host: host, hostProxy: hostProxy, vcProxy: vcProxy, player: player, apps: aw,
		metrics: "http://" + metricsAddr + "/metrics"}

	repo := p6Repo
	apps := make([]*kubeoperav1alpha1.KubeOperaApp, n)
	for i := range n {
		apps[i] = benchApp(p6Namespace, p6AppName(i), b.git.proxy.repoURL(repo))
	}
	progress("  creating %d apps on one branch", n)
	start := time.Now()
	if err := parallel(writers, n, func(i int) error { return host.Client.Create(ctx, apps[i]) }); err != nil {
		return err
	}
	if _, err := waitAllSynced(ctx, aw, apps, start, p5SyncedTimeout(n)); err != nil {
		return err
	}
	if err := m.quiet(ctx); err != nil {
		return err
	}
	progress("  all %d apps Synced after %s", n, time.Since(start).Round(time.Millisecond))

	// The operator's own push: one app's image changes.
	changed := apps[0]
	before, err := m.read(ctx)
	if err != nil {
		return err
	}
	if err := host.Client.Get(ctx, client.ObjectKeyFromObject(changed), changed); err != nil {
		return err
	}
	patch := client.MergeFrom(changed.DeepCopy())
	changed.Spec.App.Image += "-next"
	if err := host.Client.Patch(ctx, changed, patch); err != nil {
		return err
	}
	head, err := m.waitChangedSynced(ctx, changed, repo)
	if err != nil {
		return fmt.Errorf("own push: %w", err)
	}
	if err := m.waitApplied(ctx, apps, head); err != nil {
		return fmt.Errorf("own push: %w", err)
	}
	if err := m.quiet(ctx); err != nil {
		return err
	}
	after, err := m.read(ctx)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("%d Synced apps on one branch", n)
	b.addBranchFigures("P6.own", what+", the operator pushes one app's change", after.minus(before), changed.Name, branchFloor{reconciles: 2, statusWrites: 1})

	// Someone else's push: a README at the repository's root.
	if before, err = m.read(ctx); err != nil {
		return err
	}
	head, err = b.git.srv.PushOutsideCommit(repo, defaultBranch, "README.md", "Applications of tenant "+tenantName+".\n")
	if err != nil {
		return err
	}
	player.pushedTo(ctx, map[string]bool{repo: true})
	if err := m.waitApplied(ctx, apps, head); err != nil {
		return fmt.Errorf("outside push: %w", err)
	}
	if err := m.quiet(ctx); err != nil {
		return err
	}
	if after, err = m.read(ctx); err != nil {
		return err
	}
	b.addBranchFigures("P6.outside", what+", someone else pushes a README", after.minus(before), "", branchFloor{fetches: 1})
	return nil
}

const (
	p6Namespace = "shared"
	p6Repo      = "p6-shared"
	// quietFor is how long every counter of branchMeter must stay still for the operator to count
	// as done with a push (its Tenant's pacing releases deferred events at 10/s, so a push whose
	// events it deferred keeps the counters moving until they are all out).
	quietFor = 3 * time.Second
	// p6Timeout bounds each wait of P6 after the apps are Synced.
	p6Timeout = 3 * time.Minute
)

func p6AppName(i int) string { return fmt.Sprintf("app-%03d", i) }

// branchFloor is what a push into the shared branch requires (see sharedBranch).
type branchFloor struct {
	reconciles, statusWrites, fetches float64
}

// addBranchFigures adds one push's figures: the counts, their floors and what they are made of.
func (b *bench) addBranchFigures(id, what string, d branchReading, changed string, floor branchFloor) {
	others := 0
	for name, count := range d.written {
		if name != changed && count > 0 {
			others++
		}
	}
	fluxNote := fmt.Sprintf("Flux, played, reconciled %d Kustomizations: one per app, each with a GitRepository that fetches the branch", d.flux)
	b.add(Figure{ID: id + ".reconciles", What: what + ": app reconciles by the operator; " + fluxNote, Unit: "reconciles",
		Value: d.reconciles, Floor: floorOf(floor.reconciles), FloorWhat: "the changed app's passes", Goal: goalOverFloor, Limit: 2})
	b.add(Figure{ID: id + ".status-writes", What: what + ": KubeOperaApp status writes to the host (all its host writes: " + breakdownText(d.hostWrites) + ")", Unit: "writes",
		Value: float64(d.statusWrites), Floor: floorOf(floor.statusWrites), FloorWhat: "the changed app's new state", Goal: goalOverFloor, Limit: 1})
	b.add(Figure{ID: id + ".others-written", What: what + ": apps other than the changed one whose object was written", Unit: "apps",
		Value: float64(others), Floor: floorOf(0), FloorWhat: "no other folder changed", Goal: goalMax, Limit: 0})
	b.add(Figure{ID: id + ".fetches", What: fmt.Sprintf("%s: Git fetches by the operator (%d pushes; vCluster requests: %s)", what, d.pushes, countsText(d.vc)), Unit: "fetches",
		Value: float64(d.fetches), Floor: floorOf(floor.fetches), FloorWhat: "reading a head the operator did not make, once", Goal: goalOverFloor, Limit: 0})
}

func breakdownText(m map[string]int) string {
	if len(m) == 0 {
		return "no host write"
	}
	return strings.TrimSuffix(strings.TrimPrefix(breakdown(m), "Writes in the window: "), ".")
}

// branchMeter reads P6's counters.
type branchMeter struct {
	b                  *bench
	host               *cluster
	hostProxy, vcProxy *apiProxy
	player             *fluxPlayer
	apps               *appWatch
	metrics            string // the operator's metrics URL (plain HTTP on loopback)
}

// branchReading is the counters at one moment, or (minus) their change over a push.
type branchReading struct {
	reconciles      float64
	hostWrites      map[string]int // audit log, by "verb resource[/subresource]"
	statusWrites    int
	written         map[string]int // writes seen per app (resourceVersion changes)
	fetches, pushes int
	vc              apiCounts
	flux            int64
	gitEvents       int
}

func (m *branchMeter) read(ctx context.Context) (branchReading, error) {
	var r branchReading
	var err error
	if r.reconciles, err = scrapeCounter(ctx, m.metrics, "controller_runtime_reconcile_total", `controller="kubeoperaapp"`); err != nil {
		return r, err
	}
	if r.hostWrites, err = m.host.writes(operatorUser); err != nil {
		return r, err
	}
	r.written = m.apps.writeCounts()
	events, _ := m.b.git.proxy.snapshot()
	r.fetches, r.pushes = countGit(events, time.Time{})
	r.gitEvents = len(events)
	r.vc = m.vcProxy.stats.snapshot()
	r.flux = m.player.reconciles.Load()
	return r, nil
}

// minus is the change from earlier to r.
func (r branchReading) minus(earlier branchReading) branchReading {
	d := branchReading{reconciles: r.reconciles - earlier.reconciles, fetches: r.fetches - earlier.fetches,
		pushes: r.pushes - earlier.pushes, vc: minus(r.vc, earlier.vc), flux: r.flux - earlier.flux,
		gitEvents: r.gitEvents - earlier.gitEvents, written: map[string]int{}}
	d.hostWrites, _ = diff(earlier.hostWrites, r.hostWrites)
	for k, v := range d.hostWrites {
		if strings.HasSuffix(k, " kubeoperaapps/status") {
			d.statusWrites += v
		}
	}
	for k, v := range r.written {
		if v != earlier.written[k] {
			d.written[k] = v - earlier.written[k]
		}
	}
	return d
}

// quiet waits until the operator's reconciles, its host and vCluster requests, the Git
// requests and Flux's reconciles have all stayed still for quietFor.
func (m *branchMeter) quiet(ctx context.Context) error {
	sig := func() (string, error) {
		r, err := scrapeCounter(ctx, m.metrics, "controller_runtime_reconcile_total", `controller="kubeoperaapp"`)
		if err != nil {
			return "", err
		}
		events, _ := m.b.git.proxy.snapshot()
		return fmt.Sprintf("%v %d %d %d %d", r, m.hostProxy.stats.snapshot().total(), m.vcProxy.stats.snapshot().total(),
			len(events), m.player.reconciles.Load()), nil
	}
	last, err := sig()
	if err != nil {
		return err
	}
	still, deadline := time.Now(), time.Now().Add(p6Timeout)
	for time.Since(still) < quietFor {
		if time.Now().After(deadline) {
			return fmt.Errorf("the operator was not quiet for %s within %s", quietFor, p6Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond): // sampling period of the counters
		}
		s, err := sig()
		if err != nil {
			return err
		}
		if s != last {
			last, still = s, time.Now()
		}
	}
	return nil
}

// waitChangedSynced waits until app is Synced for its current generation at a commit that is
// the branch head, and returns that head.
func (m *branchMeter) waitChangedSynced(ctx context.Context, app *kubeoperav1alpha1.KubeOperaApp, repo string) (string, error) {
	deadline := time.Now().Add(p6Timeout)
	for {
		a := &kubeoperav1alpha1.KubeOperaApp{}
		if err := m.host.Client.Get(ctx, client.ObjectKeyFromObject(app), a); err != nil {
			return "", err
		}
		head, err := m.b.git.srv.Head(repo, defaultBranch)
		if err != nil {
			return "", err
		}
		c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)
		if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == a.Generation &&
			a.Status.Commit != "" && a.Status.Commit == head {
			return head, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("app %s not Synced at the branch head within %s", a.Name, p6Timeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling the host for the app's state
		}
	}
}

// waitApplied waits until every app's Kustomization reported commit applied (the Flux player).
func (m *branchMeter) waitApplied(ctx context.Context, apps []*kubeoperav1alpha1.KubeOperaApp, commit string) error {
	deadline := time.Now().Add(p6Timeout)
	revision := defaultBranch + "@sha1:" + commit
	for {
		missing := 0
		for _, a := range apps {
			if !m.player.hasApplied(kustomizationKey(a), revision) {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Kustomizations did not apply %s within %s", missing, len(apps), revision, p6Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling what the player recorded
		}
	}
}

func kustomizationKey(a *kubeoperav1alpha1.KubeOperaApp) client.ObjectKey {
	return client.ObjectKey{Namespace: render.FluxNamespace(a), Name: render.FluxName(a)}
}

// scrapeCounter sums the samples of counter name whose labels contain match, from a
// Prometheus text endpoint.
func scrapeCounter(ctx context.Context, url, name, match string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape the operator's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape the operator's metrics: %s", resp.Status)
	}
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, match) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, errors.New("the operator's metrics hold no " + name + " sample with " + match)
	}
	return sum, nil
}
