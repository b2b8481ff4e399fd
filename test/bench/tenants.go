package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// tenantSizes is the scale of P5.
type tenantSizes struct {
	tenants, apps, repos int
	// interval plays one minute of Flux (spec.flux.interval's default, render.DefaultFluxInterval).
	interval time.Duration
}

// with overrides the sizes given (non-zero) on the command line.
func (t tenantSizes) with(tenants, apps, repos int, interval time.Duration) tenantSizes {
	if tenants > 0 {
		t.tenants = tenants
	}
	if apps > 0 {
		t.apps = apps
	}
	if repos > 0 {
		t.repos = repos
	}
	if interval > 0 {
		t.interval = interval
	}
	return t
}

// fluxMinute is the Flux interval the played interval stands for (render.DefaultFluxInterval).
const fluxMinute = time.Minute

// steadyIntervals is the length of P5's steady-state window in Flux intervals: 10 minutes.
const steadyIntervals = 10

// tenantScale is P5: tenants vClusters (apiProxy in front of one shared tenant API server, one
// Tenant and host namespace each), apps apps each over repos repositories, Flux played by
// fluxPlayer. It measures the time until every app is Synced, the operator's peak RSS and
// goroutines, connections per vCluster, then a steady state of steadyIntervals played Flux
// intervals; then the floor.
func (b *bench) tenantScale(ctx context.Context) error {
	sz := b.m.tenants
	n := sz.tenants * sz.apps
	b.phase++
	dir := filepath.Join(b.work, fmt.Sprintf("%02d-tenants", b.phase))
	pc, err := b.startProxiedClusters(ctx, dir, "vclusters")
	if err != nil {
		return err
	}
	defer pc.stop()
	host, vcs, ca, hostProxy, opKC, opKCPath := pc.host, pc.vcs, pc.ca, pc.hostProxy, pc.opKC, pc.opKCPath

	// The vClusters.
	vcUp, err := vcs.adminConfig(vclusterUser)
	if err != nil {
		return err
	}
	progress("  %d tenants: proxies, Tenants, Secrets", sz.tenants)
	proxies := make([]*apiProxy, sz.tenants)
	tenantKCs := make([][]byte, sz.tenants)
	defer func() {
		for _, p := range proxies {
			if p != nil {
				p.close()
			}
		}
	}()
	for i := range sz.tenants {
		names := make([]string, sz.apps)
		for j := range sz.apps {
			names[j] = p5AppName(i, j)
		}
		if proxies[i], err = startAPIProxy(fmt.Sprintf("vc-%03d", i), vcUp, ca, names); err != nil {
			return err
		}
		if tenantKCs[i], err = proxies[i].kubeconfig(ca); err != nil {
			return err
		}
	}
	if err := parallel(8, sz.tenants, func(i int) error {
		return setupTenantNamespace(ctx, host, p5Namespace(i), tenantKCs[i], b.git)
	}); err != nil {
		return err
	}

	netw, err := startControllerNet(host.Client)
	if err != nil {
		return err
	}
	defer netw.close()
	// The operator's own clock runs as fast as the played Flux: its resync (10 min) and sync
	// poll (2 min) are scaled by the same factor as Flux's interval.
	scale := float64(sz.interval) / float64(fluxMinute)
	resync := time.Duration(float64(kubeoperaResync) * scale)
	poll := time.Duration(float64(kubeoperaSyncPoll) * scale)
	pprofAddr, err := testenv.FreeAddr()
	if err != nil {
		return err
	}
	op, err := startOperatorWith(ctx, b.bin, opKCPath, filepath.Join(dir, "operator"), netw.url, []string{
		"--pprof-bind-address=" + pprofAddr,
		"--app-resync-interval=" + resync.String(),
		"--app-sync-poll-interval=" + poll.String(),
	})
	if err != nil {
		return err
	}
	op.pprof = pprofAddr
	defer op.stop()
	b.git.proxy.opPid.Store(int64(op.pid()))
	idleGoroutines, err := op.goroutines(ctx)
	if err != nil {
		return err
	}

	pctx, stopPlayer := context.WithCancel(ctx)
	defer stopPlayer()
	player, err := startFluxPlayer(pctx, vcs.Config, b.git, sz.interval)
	if err != nil {
		return err
	}
	w, err := startAppWatch(pctx, host.Config, vcs.Config)
	if err != nil {
		return err
	}
	peakGoroutines := newPeak()
	go func() {
		t := time.NewTicker(time.Second) // sampling period of a measurement
		defer t.Stop()
		for {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
				if g, err := op.goroutines(pctx); err == nil {
					peakGoroutines.add(g)
				}
			}
		}
	}()

	// All apps at once, as P4 (16 writers).
	apps := make([]*kubeoperav1alpha1.KubeOperaApp, 0, n)
	for i := range sz.tenants {
		for j := range sz.apps {
			repo := p5Repo((i*sz.apps + j) % sz.repos)
			apps = append(apps, benchApp(p5Namespace(i), p5AppName(i, j), b.git.proxy.repoURL(repo)))
		}
	}
	progress("  creating %d apps", n)
	hostBefore, vcBefore := hostProxy.stats.snapshot(), sumCounts(proxies)
	profiled := make(chan error, 1)
	go func() {
		if heapProfileDir == "" {
			profiled <- nil
			return
		}
		profiled <- op.cpuProfile(ctx, tenantsCPUProfile, filepath.Join(heapProfileDir, "cpu-tenants-sync.pb.gz"))
	}()
	cpuBefore, err := op.readCPU()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := parallel(writers, n, func(i int) error { return host.Client.Create(ctx, apps[i]) }); err != nil {
		return err
	}
	last, err := waitAllSynced(ctx, w, apps, start, p5SyncedTimeout(n))
	if err != nil {
		return err
	}
	wall := last.Sub(start)
	cpuSynced, err := op.readCPU()
	if err != nil {
		return err
	}
	syncHost, syncVC := minus(hostProxy.stats.snapshot(), hostBefore), minus(sumCounts(proxies), vcBefore)
	syncText := fmt.Sprintf("operator requests: host %s; vClusters %s; %s", countsText(syncHost), countsText(syncVC), cpuSynced.since(cpuBefore))
	progress("  all %d apps Synced after %s (%s)", n, wall.Round(time.Millisecond), syncText)
	progress("  host %s", perApp(syncHost, n))
	progress("  vClusters %s", perApp(syncVC, n))
	if err := <-profiled; err != nil {
		return err
	}
	goroutinesSynced, err := op.goroutines(ctx)
	if err != nil {
		return err
	}
	peakGoroutines.add(goroutinesSynced)

	// Steady state: settle for two played intervals, then steadyIntervals of them.
	ss, err := b.tenantSteadyState(ctx, host, vcs, hostProxy, proxies, sz)
	if err != nil {
		return err
	}
	_, peakRSS, err := op.memory()
	if err != nil {
		return err
	}
	if heapProfileDir != "" {
		if err := op.heapProfile(ctx, filepath.Join(heapProfileDir, "heap-tenants.pb.gz")); err != nil {
			return err
		}
	}
	goroutinesEnd, err := op.goroutines(ctx)
	if err != nil {
		return err
	}
	peakGoroutines.add(goroutinesEnd)
	var maxOpen, maxWatch, endOpen int
	for _, p := range proxies {
		c := p.stats.snapshot()
		maxOpen, maxWatch, endOpen = max(maxOpen, c.peakOpen), max(maxWatch, c.peakWatchConns), max(endOpen, c.open)
	}
	op.stop()
	b.git.proxy.opPid.Store(0)

	what := fmt.Sprintf("%d tenants × %d apps over %d repositories", sz.tenants, sz.apps, sz.repos)
	syncedFig := Figure{ID: "P5.synced", What: fmt.Sprintf("%s: wall time until all Synced (%s)", what, syncText),
		Unit: "s", Value: wall.Seconds(), Goal: goalRatio, Limit: 2}
	progress("  floor")
	floor, floorWhat, ferr := b.tenantFloor(ctx, vcs, tenantKCs, opKC, hostProxy, proxies, apps, player)
	if ferr != nil {
		syncedFig.Err = fmt.Sprintf("wall time %.1f s, but the floor failed: %v", wall.Seconds(), ferr)
	} else {
		syncedFig.Floor, syncedFig.FloorWhat = floorOf(floor.Seconds()), floorWhat
	}
	b.add(syncedFig)
	b.add(Figure{ID: "P5.rss", What: what + ": operator peak RSS", Unit: "MiB", Value: peakRSS, Goal: goalMax, Limit: 250})
	b.add(Figure{ID: "P5.goroutines", What: fmt.Sprintf("%s: operator goroutines, peak of 1 s samples (%d when all Synced, %d at the end)", what, goroutinesSynced, goroutinesEnd),
		Unit: "goroutines", Value: float64(peakGoroutines.get()), Floor: floorOf(float64(idleGoroutines)), FloorWhat: "the operator before any app", Goal: goalNone})
	b.add(Figure{ID: "P5.conns", What: fmt.Sprintf("%s: open connections per vCluster, highest peak over the vClusters (%d at the end)", what, endOpen),
		Unit: "connections", Value: float64(maxOpen), Goal: goalNone})
	b.add(Figure{ID: "P5.watch-conns", What: what + ": connections carrying a watch per vCluster, highest peak over the vClusters",
		Unit: "connections", Value: float64(maxWatch), Goal: goalMax, Limit: 1})
	b.addTenantSteadyState(what, sz, n, ss)
	return ferr
}

// tenantsCPUProfile is how much of P5's way to all Synced the operator's CPU profile covers
// (-heap-profile): the first minute, when every app's first passes run.
const tenantsCPUProfile = time.Minute

// Scaled by P5: the operator's defaults (controllers/app options.go).
const (
	kubeoperaResync   = 10 * time.Minute
	kubeoperaSyncPoll = 2 * time.Minute
)

// proxiedClusters are the API servers of P5 and P6: the host, and one API server for the
// vClusters with the Flux CRDs and the flux-system namespace; the operator reaches the host
// through an API proxy that counts its requests (opKC, written to opKCPath).
type proxiedClusters struct {
	host, vcs *cluster
	ca        *benchCA
	hostProxy *apiProxy
	opKC      []byte
	opKCPath  string
	stops     []func()
}

func (pc *proxiedClusters) stop() {
	for i := len(pc.stops) - 1; i >= 0; i-- {
		pc.stops[i]()
	}
}

// startProxiedClusters starts the proxiedClusters in dir, the vClusters' API server named vcName.
func (b *bench) startProxiedClusters(ctx context.Context, dir, vcName string) (_ *proxiedClusters, err error) {
	pc := &proxiedClusters{}
	defer func() {
		if err != nil {
			pc.stop()
		}
	}()
	if pc.host, err = startCluster(dir, "host", apptest.HostCRDDirs(false)); err != nil {
		return nil, err
	}
	pc.stops = append(pc.stops, func() { _ = pc.host.Stop() })
	if pc.vcs, err = startCluster(dir, vcName, []string{filepath.Join(b.flux, "crds")}); err != nil {
		return nil, err
	}
	pc.stops = append(pc.stops, func() { _ = pc.vcs.Stop() })
	if err := pc.vcs.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}); err != nil {
		return nil, err
	}
	if pc.ca, err = newBenchCA(); err != nil {
		return nil, err
	}
	hostUp, err := pc.host.adminConfig(operatorUser)
	if err != nil {
		return nil, err
	}
	if pc.hostProxy, err = startAPIProxy("host", hostUp, pc.ca, nil); err != nil {
		return nil, err
	}
	pc.stops = append(pc.stops, pc.hostProxy.close)
	if pc.opKC, err = pc.hostProxy.kubeconfig(pc.ca); err != nil {
		return nil, err
	}
	pc.opKCPath = filepath.Join(dir, "operator-via-proxy.kubeconfig")
	if err := os.WriteFile(pc.opKCPath, pc.opKC, 0o600); err != nil {
		return nil, err
	}
	return pc, nil
}

func p5Namespace(i int) string    { return fmt.Sprintf("t%03d", i) }
func p5AppName(i, j int) string   { return fmt.Sprintf("t%03d-app-%02d", i, j) }
func p5Repo(r int) string         { return fmt.Sprintf("p5-%02d", r) }
func p5FloorRepo(r string) string { return "floor-" + r }

// p5SyncedTimeout bounds the wait for all apps: generous, the figure is the time taken.
func p5SyncedTimeout(n int) time.Duration {
	return 3*time.Minute + time.Duration(n)*300*time.Millisecond
}

// waitAllSynced waits until every app was seen Synced (appWatch) and returns the latest time.
func waitAllSynced(ctx context.Context, w *appWatch, apps []*kubeoperav1alpha1.KubeOperaApp, since time.Time, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		var last time.Time
		missing := 0
		for _, a := range apps {
			t, ok := w.syncedAt(client.ObjectKeyFromObject(a))
			if !ok || t.Before(since) {
				missing++
				continue
			}
			if t.After(last) {
				last = t
			}
		}
		if missing == 0 {
			return last, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%d of %d apps not Synced after %s", missing, len(apps), timeout)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(200 * time.Millisecond): // polling what the informer recorded; the times come from its events
		}
	}
}

// steadyReading is what P5's steady-state window measured.
type steadyReading struct {
	window                   time.Duration
	host, tenant             apiCounts // requests in the window
	hostWrites, tenantWrites int       // audit log
	hostDiff, tenantDiff     map[string]int
	fetches, pushes          int
}

func (b *bench) tenantSteadyState(ctx context.Context, host, vcs *cluster, hostProxy *apiProxy, proxies []*apiProxy, sz tenantSizes) (steadyReading, error) {
	var r steadyReading
	select {
	case <-time.After(2 * sz.interval): // settling before the measured window
	case <-ctx.Done():
		return r, ctx.Err()
	}
	hostBefore, err := host.writes(operatorUser)
	if err != nil {
		return r, err
	}
	tenantBefore, err := vcs.writes(vclusterUser)
	if err != nil {
		return r, err
	}
	if _, n := diff(nil, tenantBefore); n == 0 {
		return r, errors.New("the vClusters' audit log holds no write of user " + vclusterUser + ": write attribution is broken")
	}
	hb := hostProxy.stats.snapshot()
	tb := sumCounts(proxies)
	if hb.total() == 0 || tb.total() == 0 {
		return r, errors.New("the API proxies counted no request: request attribution is broken")
	}
	start := time.Now()
	r.window = steadyIntervals * sz.interval
	progress("  steady state: %s (%d played Flux intervals of %s)", r.window, steadyIntervals, sz.interval)
	select {
	case <-time.After(r.window): // the measured window itself
	case <-ctx.Done():
		return r, ctx.Err()
	}
	r.window = time.Since(start)
	r.host = minus(hostProxy.stats.snapshot(), hb)
	r.tenant = minus(sumCounts(proxies), tb)
	hostAfter, err := host.writes(operatorUser)
	if err != nil {
		return r, err
	}
	tenantAfter, err := vcs.writes(vclusterUser)
	if err != nil {
		return r, err
	}
	r.hostDiff, r.hostWrites = diff(hostBefore, hostAfter)
	r.tenantDiff, r.tenantWrites = diff(tenantBefore, tenantAfter)
	events, _ := b.git.proxy.snapshot()
	end := time.Now()
	var inWindow []gitEvent
	for _, e := range events {
		if !e.at.After(end) {
			inWindow = append(inWindow, e)
		}
	}
	r.fetches, r.pushes = countGit(inWindow, start)
	return r, nil
}

func (b *bench) addTenantSteadyState(what string, sz tenantSizes, n int, r steadyReading) {
	intervals := r.window.Seconds() / sz.interval.Seconds()
	ss := fmt.Sprintf("%s, steady state of %.0f Flux intervals (1 min played in %s)", what, intervals, sz.interval)
	zero := floorOf(0)
	rps := func(c apiCounts) float64 { return float64(c.total()) / r.window.Seconds() }
	b.add(Figure{ID: "P5.host-rps", What: ss + ": host API requests/s by the operator (" + countsText(r.host) + ")", Unit: "req/s",
		Value: rps(r.host), Floor: zero, FloorWhat: "nothing changed", Goal: goalNone})
	b.add(Figure{ID: "P5.host-per-app", What: ss + ": host API requests per app per Flux interval", Unit: "req",
		Value: float64(r.host.total()) / float64(n) / intervals, Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0.1})
	b.add(Figure{ID: "P5.tenant-rps", What: ss + ": vCluster API requests/s by the operator, all vClusters (" + countsText(r.tenant) + ")", Unit: "req/s",
		Value: rps(r.tenant), Floor: zero, FloorWhat: "nothing changed", Goal: goalNone})
	b.add(Figure{ID: "P5.host-writes", What: ss + ": writes to the host API server", Unit: "writes", Value: float64(r.hostWrites),
		Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0, Note: breakdown(r.hostDiff)})
	b.add(Figure{ID: "P5.tenant-writes", What: ss + ": writes to the vClusters", Unit: "writes", Value: float64(r.tenantWrites),
		Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0, Note: breakdown(r.tenantDiff)})
	b.add(Figure{ID: "P5.git-pushes", What: ss + ": Git pushes", Unit: "pushes", Value: float64(r.pushes),
		Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0})
	b.add(Figure{ID: "P5.git-fetches", What: ss + ": Git fetches by the operator", Unit: "fetches", Value: float64(r.fetches),
		Floor: zero, FloorWhat: "nothing changed", Goal: goalMax, Limit: 0})
}

func countsText(c apiCounts) string {
	return fmt.Sprintf("%d reads, %d watches, %d writes", c.requests[kindRead], c.requests[kindWatch], c.requests[kindWrite])
}

func sumCounts(ps []*apiProxy) apiCounts {
	out := apiCounts{requests: map[requestKind]int{}, byResource: map[kindResource]int{}}
	for _, p := range ps {
		c := p.stats.snapshot()
		for k, v := range c.requests {
			out.requests[k] += v
		}
		for k, v := range c.byResource {
			out.byResource[k] += v
		}
	}
	return out
}

// minus is the requests of a after b.
func minus(a, b apiCounts) apiCounts {
	out := a
	out.requests, out.byResource = map[requestKind]int{}, map[kindResource]int{}
	for k, v := range a.requests {
		out.requests[k] = v - b.requests[k]
	}
	for k, v := range a.byResource {
		if d := v - b.byResource[k]; d != 0 {
			out.byResource[k] = d
		}
	}
	return out
}

// perApp is the reads and writes of c per resource, divided by n apps, largest first
// ("writes/app: 4.0 events, 3.1 kubeoperaapps/status; reads/app: ...").
func perApp(c apiCounts, n int) string {
	var parts []string
	for _, kind := range []requestKind{kindWrite, kindRead} {
		type entry struct {
			resource string
			count    int
		}
		var es []entry
		for k, v := range c.byResource {
			if k.kind == kind {
				es = append(es, entry{k.resource, v})
			}
		}
		if len(es) == 0 {
			continue
		}
		sort.Slice(es, func(i, j int) bool {
			if es[i].count != es[j].count {
				return es[i].count > es[j].count
			}
			return es[i].resource < es[j].resource
		})
		var items []string
		for _, e := range es {
			items = append(items, fmt.Sprintf("%.1f %s", float64(e.count)/float64(n), e.resource))
		}
		parts = append(parts, fmt.Sprintf("%ss/app: %s", kind, strings.Join(items, ", ")))
	}
	return strings.Join(parts, "; ")
}

// tenantFloor is P5's floor: the same work done by bare clients at client speed, one step after
// the other: one raw go-git commit+push per repository of the files the operator pushed (all
// repositories at once); per app, on the host through the host proxy, the reads a pass needs
// (Tenant, kubeconfig and Git Secrets) and one status write; through each tenant's proxy, a copy
// of every object the operator created in the vClusters (as stored, in namespaces prefixed
// "f-", pointing at the floor repositories), 16 at once; until the Flux player reports every
// copied Kustomization applied at its floor repository's head.
func (b *bench) tenantFloor(ctx context.Context, vcs *cluster, tenantKCs [][]byte, hostKC []byte, hostProxy *apiProxy, proxies []*apiProxy, apps []*kubeoperav1alpha1.KubeOperaApp, player *fluxPlayer) (time.Duration, string, error) {
	contents := map[string]map[string]string{}
	for _, a := range apps {
		repo := repoOf(a.Spec.Git.URL)
		if _, ok := contents[repo]; ok {
			continue
		}
		files, err := b.git.srv.Files(repo, defaultBranch, "")
		if err != nil {
			return 0, "", err
		}
		contents[repo] = files
	}
	objs, err := floorObjects(ctx, vcs.Client)
	if err != nil {
		return 0, "", err
	}
	hostC, err := kubeconfigClient(hostKC)
	if err != nil {
		return 0, "", err
	}
	clients := make([]client.Client, len(tenantKCs))
	for i, kc := range tenantKCs {
		if clients[i], err = kubeconfigClient(kc); err != nil {
			return 0, "", err
		}
	}
	// Discovery before the clock starts: a new client maps kinds on first use.
	if err := warmMapper(hostC, kubeoperav1alpha1.GroupVersion.WithKind("KubeOperaApp"), corev1.SchemeGroupVersion.WithKind("Secret"),
		tenantv1alpha1.GroupVersion.WithKind("Tenant")); err != nil {
		return 0, "", err
	}
	for _, c := range clients {
		if err := warmMapper(c, floorKinds...); err != nil {
			return 0, "", err
		}
	}

	hostBefore, vcBefore := hostProxy.stats.snapshot(), sumCounts(proxies)
	busyBefore, totalBefore, err := machineCPU()
	if err != nil {
		return 0, "", err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(contents))
	for repo, files := range contents {
		wg.Go(func() {
			if _, err := rawPush(ctx, b.git, p5FloorRepo(repo), files); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return 0, "", fmt.Errorf("raw push: %w", err)
	}
	gitDone := time.Since(start)
	if err := parallel(writers, len(apps), func(i int) error { return hostFloor(ctx, hostC, apps[i]) }); err != nil {
		return 0, "", fmt.Errorf("host reads: %w", err)
	}
	hostDone := time.Since(start)
	for _, pass := range [][]floorObject{objs.namespaces, objs.rest} {
		if err := parallel(writers, len(pass), func(i int) error {
			o := pass[i]
			err := clients[o.tenant].Create(ctx, o.obj.DeepCopy())
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}); err != nil {
			return 0, "", fmt.Errorf("vCluster objects: %w", err)
		}
	}
	createDone := time.Since(start)
	// Until the player applied every copied Kustomization at its floor repository's head.
	heads := map[string]string{}
	for repo := range contents {
		h, err := b.git.srv.Head(p5FloorRepo(repo), defaultBranch)
		if err != nil {
			return 0, "", err
		}
		heads[p5FloorRepo(repo)] = h
	}
	deadline := time.Now().Add(p5SyncedTimeout(len(apps)))
	for _, k := range objs.kustomizations {
		rev := defaultBranch + "@sha1:" + heads[k.repo]
		for !player.hasApplied(k.key, rev) {
			if time.Now().After(deadline) {
				return 0, "", fmt.Errorf("the Flux player did not apply %s at %s", k.key, rev)
			}
			select {
			case <-ctx.Done():
				return 0, "", ctx.Err()
			case <-time.After(50 * time.Millisecond): // polling what the player recorded
			}
		}
	}
	total := time.Since(start)
	busy, all, err := machineCPU()
	if err != nil {
		return 0, "", err
	}
	what := fmt.Sprintf("bare clients: raw push %.1f s, host reads %.1f s, %d vCluster objects %.1f s, Flux applied %.1f s; requests: host %s; vClusters %s; cores %.0f%% busy",
		gitDone.Seconds(), (hostDone - gitDone).Seconds(), len(objs.namespaces)+len(objs.rest), (createDone - hostDone).Seconds(), (total - createDone).Seconds(),
		countsText(minus(hostProxy.stats.snapshot(), hostBefore)), countsText(minus(sumCounts(proxies), vcBefore)), 100*float64(busy-busyBefore)/float64(max(all-totalBefore, 1)))
	return total, what, nil
}

func warmMapper(c client.Client, gvks ...schema.GroupVersionKind) error {
	for _, gvk := range gvks {
		if _, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return fmt.Errorf("map %s: %w", gvk, err)
		}
	}
	return nil
}

// hostFloor is what one app's pass needs on the host at least: its Tenant, the Tenant's
// kubeconfig Secret and the Git Secret read, and one status write (the app's status as it is).
func hostFloor(ctx context.Context, c client.Client, app *kubeoperav1alpha1.KubeOperaApp) error {
	t := &tenantv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: tenantName}, t); err != nil {
		return err
	}
	for _, name := range []string{"vc-" + tenantName, gitSecretName} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: name}, &corev1.Secret{}); err != nil {
			return err
		}
	}
	cur := &kubeoperav1alpha1.KubeOperaApp{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), cur); err != nil {
		return err
	}
	return c.Status().Update(ctx, cur)
}

// repoOf is the repository name of a URL through the Git proxy.
func repoOf(u string) string {
	return strings.TrimSuffix(u[strings.LastIndex(u, "/")+1:], ".git")
}

type floorObject struct {
	tenant int
	obj    *unstructured.Unstructured
}

type floorKustomization struct {
	key  types.NamespacedName
	repo string
}

type floorSet struct {
	namespaces, rest []floorObject
	kustomizations   []floorKustomization
}

// floorKinds are the kinds the operator creates in a vCluster.
var floorKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Namespace"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "Secret"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"},
	{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"},
}

// floorObjects lists what the operator created in the vClusters (its managed-by label) and
// returns copies for the floor, each with the tenant whose proxy creates it.
func floorObjects(ctx context.Context, c client.Client) (floorSet, error) {
	var out floorSet
	for _, gvk := range floorKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.MatchingLabels{render.LabelManagedBy: render.ManagedBy}); err != nil {
			return out, err
		}
		for i := range list.Items {
			src := &list.Items[i]
			app := src.GetLabels()[render.LabelName]
			if gvk.Kind == "Namespace" {
				app = src.GetName() // an app namespace is named after its app; flux-system goes to tenant 0
			}
			tenant := tenantOf(app)
			o := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": src.GetAPIVersion(), "kind": src.GetKind(),
			}}
			for _, f := range []string{"spec", "data", "type", "rules", "subjects", "roleRef"} {
				if v, ok := src.Object[f]; ok {
					o.Object[f] = v
				}
			}
			o.SetLabels(src.GetLabels())
			if gvk.Kind == "Namespace" {
				o.SetName("f-" + src.GetName())
				out.namespaces = append(out.namespaces, floorObject{tenant: tenant, obj: o})
				continue
			}
			o.SetName(src.GetName())
			o.SetNamespace("f-" + src.GetNamespace())
			switch gvk.Kind {
			case "GitRepository":
				u, _, _ := unstructured.NestedString(o.Object, "spec", "url")
				repo := repoOf(u)
				_ = unstructured.SetNestedField(o.Object, strings.TrimSuffix(u, repo+".git")+p5FloorRepo(repo)+".git", "spec", "url")
			case "Kustomization":
				ns, _, _ := unstructured.NestedString(o.Object, "spec", "sourceRef", "namespace")
				if ns != "" {
					_ = unstructured.SetNestedField(o.Object, "f-"+ns, "spec", "sourceRef", "namespace")
				}
				k := &kustomizev1.Kustomization{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(src), k); err != nil {
					return out, err
				}
				repo, err := kustomizationRepo(ctx, c, k)
				if err != nil {
					return out, err
				}
				out.kustomizations = append(out.kustomizations, floorKustomization{
					key: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, repo: p5FloorRepo(repo)})
			}
			out.rest = append(out.rest, floorObject{tenant: tenant, obj: o})
		}
	}
	if len(out.kustomizations) == 0 {
		return out, errors.New("no Kustomization of the operator's in the vClusters")
	}
	// The operator applies the Flux namespace too when it exists (created here before, without
	// its label): every namespace the copies go to is created.
	have := map[string]bool{}
	for _, o := range out.namespaces {
		have[o.obj.GetName()] = true
	}
	for _, o := range out.rest {
		if ns := o.obj.GetNamespace(); !have[ns] {
			have[ns] = true
			n := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace"}}
			n.SetName(ns)
			n.SetLabels(map[string]string{render.LabelManagedBy: render.ManagedBy})
			out.namespaces = append(out.namespaces, floorObject{tenant: o.tenant, obj: n})
		}
	}
	return out, nil
}

func kustomizationRepo(ctx context.Context, c client.Client, k *kustomizev1.Kustomization) (string, error) {
	ns := k.Spec.SourceRef.Namespace
	if ns == "" {
		ns = k.Namespace
	}
	gr := &unstructured.Unstructured{}
	gr.SetGroupVersionKind(floorKinds[5])
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: k.Spec.SourceRef.Name}, gr); err != nil {
		return "", err
	}
	u, _, _ := unstructured.NestedString(gr.Object, "spec", "url")
	return repoOf(u), nil
}

// tenantOf is the tenant index of a P5 app name ("t003-app-07" → 3); 0 for other names.
func tenantOf(app string) int {
	if len(app) < 4 || app[0] != 't' {
		return 0
	}
	i, err := strconv.Atoi(app[1:4])
	if err != nil {
		return 0
	}
	return i
}

// peak keeps the highest of a series of samples.
type peak struct {
	mu sync.Mutex
	v  int
}

func newPeak() *peak { return &peak{} }

func (p *peak) add(v int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.v = max(p.v, v)
}

func (p *peak) get() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.v
}

// goroutines reads the operator's goroutine count from its pprof endpoint.
func (o *operator) goroutines(ctx context.Context) (int, error) {
	if o.pprof == "" {
		return 0, errors.New("the operator's pprof endpoint is off")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+o.pprof+"/debug/pprof/goroutine?debug=1", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, err
	}
	return parseGoroutineTotal(line)
}

// parseGoroutineTotal reads the first line of a debug=1 goroutine profile,
// "goroutine profile: total N".
func parseGoroutineTotal(line string) (int, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("unexpected goroutine profile header %q", line)
	}
	return strconv.Atoi(rest)
}
