package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// The tenant the apps go to: a Ready Tenant with its exported kubeconfig (the tenant API server,
// user vcluster-operator), as the tenant-controller leaves it.
const (
	tenantName    = "tenant-a"
	cloudSpace    = "cs-bench"
	vclusterUser  = "vcluster-operator"
	operatorUser  = "kubeopera-operator"
	gitSecretName = "git"
	// fluxSecretName holds the Git server's read-only credentials: what Flux fetches with
	// (spec.git.fluxSecretRef) where real Flux runs (P1, P2). The operator never gives Flux the
	// push credentials, and the test Git server refuses anonymous fetches.
	fluxSecretName = "git-read"
	syncedTimeout  = 3 * time.Minute
	pushedTimeout  = 5 * time.Minute
	defaultBranch  = "main"
	requestedAtKey = "reconcile.fluxcd.io/requestedAt"
)

// gitSide is the Git server with the counting proxy in front of it.
type gitSide struct {
	srv   *apptest.GitServer
	proxy *gitProxy
}

func (g *gitSide) auth() *githttp.BasicAuth {
	return &githttp.BasicAuth{Username: g.srv.User, Password: g.srv.Password}
}

// appWatch records, through informers, when each app first turned Synced and how many writes
// changed each app (new resourceVersions, by app name) on the host, and when each Kustomization
// first reported a revision applied (tenant).
type appWatch struct {
	mu      sync.Mutex
	synced  map[client.ObjectKey]time.Time
	writes  map[string]int
	applied map[string]time.Time // "<ns>/<name>@<revision>"
}

func startAppWatch(ctx context.Context, host, tenant *rest.Config) (*appWatch, error) {
	w := &appWatch{synced: map[client.ObjectKey]time.Time{}, writes: map[string]int{}, applied: map[string]time.Time{}}
	hc, err := cache.New(host, cache.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	inf, err := hc.GetInformer(ctx, &kubeoperav1alpha1.KubeOperaApp{})
	if err != nil {
		return nil, err
	}
	onApp := func(o any) {
		a, ok := o.(*kubeoperav1alpha1.KubeOperaApp)
		if !ok {
			return
		}
		c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)
		if c == nil || c.Status != metav1.ConditionTrue || a.Status.ObservedGeneration != a.Generation {
			return
		}
		w.mu.Lock()
		if _, seen := w.synced[client.ObjectKeyFromObject(a)]; !seen {
			w.synced[client.ObjectKeyFromObject(a)] = time.Now()
		}
		w.mu.Unlock()
	}
	onWrite := func(o, n any) {
		oa, ok1 := o.(*kubeoperav1alpha1.KubeOperaApp)
		na, ok2 := n.(*kubeoperav1alpha1.KubeOperaApp)
		if ok1 && ok2 && oa.ResourceVersion != na.ResourceVersion {
			w.mu.Lock()
			w.writes[na.Name]++
			w.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: onApp, UpdateFunc: func(o, n any) {
		onWrite(o, n)
		onApp(n)
	}}); err != nil {
		return nil, err
	}
	tc, err := cache.New(tenant, cache.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, err
	}
	kinf, err := tc.GetInformer(ctx, &kustomizev1.Kustomization{})
	if err != nil {
		return nil, err
	}
	onKs := func(o any) {
		k, ok := o.(*kustomizev1.Kustomization)
		if !ok || k.Status.LastAppliedRevision == "" {
			return
		}
		key := k.Namespace + "/" + k.Name + "@" + k.Status.LastAppliedRevision
		w.mu.Lock()
		if _, seen := w.applied[key]; !seen {
			w.applied[key] = time.Now()
		}
		w.mu.Unlock()
	}
	if _, err := kinf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: onKs, UpdateFunc: func(_, o any) { onKs(o) }}); err != nil {
		return nil, err
	}
	go func() { _ = hc.Start(ctx) }()
	go func() { _ = tc.Start(ctx) }()
	if !hc.WaitForCacheSync(ctx) || !tc.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("app watch caches did not sync")
	}
	return w, nil
}

// writeCounts are the writes seen so far per app name.
func (w *appWatch) writeCounts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.writes)
}

func (w *appWatch) syncedAt(key client.ObjectKey) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.synced[key]
	return t, ok
}

func (w *appWatch) appliedAt(app *kubeoperav1alpha1.KubeOperaApp, commit string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.applied[render.FluxNamespace(app)+"/"+render.FluxName(app)+"@"+render.Branch(app)+"@sha1:"+commit]
	return t, ok
}

// setupTenantNamespace creates a host namespace holding the Tenant, its kubeconfig Secret and the
// Git credentials (push and read-only).
func setupTenantNamespace(ctx context.Context, h *cluster, ns string, tenantKubeconfig []byte, g *gitSide) error {
	if err := createNamespace(ctx, h.Client, ns); err != nil {
		return err
	}
	if err := apptest.CreateTenant(ctx, h.Client, testfixture.Tenant(
		testfixture.TenantInNamespace(ns), testfixture.TenantNamed(tenantName), testfixture.TenantCloudSpace(cloudSpace),
		testfixture.TenantReady(time.Now()),
	)); err != nil {
		return err
	}
	if err := h.Client.Create(ctx, apptest.KubeconfigSecret(ns, "vc-"+tenantName, tenantKubeconfig)); err != nil {
		return err
	}
	if err := h.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gitSecretName}, Data: g.srv.SecretData(),
	}); err != nil {
		return err
	}
	return h.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fluxSecretName, Labels: map[string]string{kubeoperav1alpha1.LabelFluxCredentials: "true"}}, Data: g.srv.ReadOnlySecretData(),
	})
}

func benchApp(ns, name, repoURL string) *kubeoperav1alpha1.KubeOperaApp {
	return testfixture.KubeOperaApp(
		testfixture.AppInNamespace(ns), testfixture.AppNamed(name),
		testfixture.AppCloudSpace(cloudSpace), testfixture.AppTenant(tenantName), testfixture.AppExampleWorkload(name),
		testfixture.AppGitURL(repoURL), testfixture.AppGitSecret(gitSecretName),
	)
}

// expectedFiles are the repository paths of an app's folder: its manifests and the Git writer's
// ownership marker (gitops.OwnerFile).
func expectedFiles(app *kubeoperav1alpha1.KubeOperaApp) ([]string, error) {
	files, err := render.Manifests(app)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(files)+1)
	for name := range files {
		out = append(out, path.Join(render.Path(app, render.DefaultPathPrefix), name))
	}
	return append(out, path.Join(render.Path(app, render.DefaultPathPrefix), gitops.OwnerFile)), nil
}

// repoComplete reports how many of want are missing at the head of repo, and how many files
// there are that nobody wants (duplicates, strays).
func repoComplete(g *gitSide, repo string, want map[string]bool) (missing, extra int, err error) {
	files, err := g.srv.Files(repo, defaultBranch, "")
	if err != nil {
		return 0, 0, err
	}
	for f := range want {
		if _, ok := files[f]; !ok {
			missing++
		}
	}
	for f := range files {
		if !want[f] {
			extra++
		}
	}
	return missing, extra, nil
}

// requestReconcile does what Flux's notification-controller Receiver does on a push webhook:
// it annotates the app's GitRepository with reconcile.fluxcd.io/requestedAt, so Flux fetches at
// once instead of at its interval. A GitRepository that does not exist yet is fetched when it is
// created.
func requestReconcile(ctx context.Context, tenant client.Client, app *kubeoperav1alpha1.KubeOperaApp) error {
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: render.FluxNamespace(app), Name: render.FluxName(app)}}
	patch := client.RawPatch("application/merge-patch+json",
		fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, requestedAtKey, time.Now().Format(time.RFC3339Nano)))
	if err := tenant.Patch(ctx, repo, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// waitPushed waits for an operator push to repo after since whose head holds every file of want;
// it returns when that push completed.
func waitPushed(ctx context.Context, g *gitSide, repos map[string]map[string]bool, since time.Time, timeout time.Duration) (time.Time, error) {
	deadline := time.After(timeout)
	done := map[string]bool{}
	var last time.Time
	checked := 0
	for {
		events, next := g.proxy.snapshot()
		for _, e := range events[checked:] {
			want, ours := repos[e.repo]
			if !e.push || !e.operator || e.at.Before(since) || !ours || done[e.repo] {
				continue
			}
			missing, _, err := repoComplete(g, e.repo, want)
			if err != nil {
				return time.Time{}, err
			}
			if missing == 0 {
				done[e.repo] = true
				if e.at.After(last) {
					last = e.at
				}
			}
		}
		checked = len(events)
		if len(done) == len(repos) {
			return last, nil
		}
		select {
		case <-next:
		case <-deadline:
			return time.Time{}, fmt.Errorf("%d of %d repositories complete after %s", len(done), len(repos), timeout)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}

// rawPush is the Git floor: one commit of files (path → content) pushed to a new repository, the
// fastest way go-git allows. The objects are built directly in an in-memory store (one blob per
// file, one tree per folder, one commit) and pushed: no worktree, no index, no status scan. Adding
// the files through a worktree costs far more: one Worktree.Add per file recomputes the worktree
// status each time (quadratic in the files), and even one AddWithOptions{All: true} walks and
// hashes the worktree (see buildTree).
func rawPush(ctx context.Context, g *gitSide, repo string, files map[string]string) (time.Duration, error) {
	start := time.Now()
	r, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		return 0, err
	}
	if _, err := r.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{g.proxy.repoURL(repo)}}); err != nil {
		return 0, err
	}
	tree, err := buildTree(r.Storer, files)
	if err != nil {
		return 0, err
	}
	sig := object.Signature{Name: "bench", Email: "bench@example.com", When: time.Now()}
	commit := &object.Commit{Author: sig, Committer: sig, Message: "raw push\n", TreeHash: tree}
	obj := r.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return 0, err
	}
	hash, err := r.Storer.SetEncodedObject(obj)
	if err != nil {
		return 0, err
	}
	ref := plumbing.NewBranchReferenceName(defaultBranch)
	if err := r.Storer.SetReference(plumbing.NewHashReference(ref, hash)); err != nil {
		return 0, err
	}
	if err := r.PushContext(ctx, &git.PushOptions{Auth: g.auth(), RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)}}); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// buildTree stores a blob per file and a tree per folder of files (path → content) and returns
// the root tree's hash.
func buildTree(s storer.EncodedObjectStorer, files map[string]string) (plumbing.Hash, error) {
	type folder struct {
		blobs   map[string]plumbing.Hash
		folders map[string]*folder
	}
	newFolder := func() *folder { return &folder{blobs: map[string]plumbing.Hash{}, folders: map[string]*folder{}} }
	root := newFolder()
	for name, content := range files {
		obj := s.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		obj.SetSize(int64(len(content)))
		wr, err := obj.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := io.WriteString(wr, content); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := wr.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
		hash, err := s.SetEncodedObject(obj)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		parts := strings.Split(name, "/")
		f := root
		for _, p := range parts[:len(parts)-1] {
			if f.folders[p] == nil {
				f.folders[p] = newFolder()
			}
			f = f.folders[p]
		}
		f.blobs[parts[len(parts)-1]] = hash
	}
	var store func(f *folder) (plumbing.Hash, error)
	store = func(f *folder) (plumbing.Hash, error) {
		t := &object.Tree{}
		for name, hash := range f.blobs {
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: hash})
		}
		for name, sub := range f.folders {
			hash, err := store(sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: hash})
		}
		// Git orders tree entries by name, a folder's name as if it ended in '/'.
		sortKey := func(e object.TreeEntry) string {
			if e.Mode == filemode.Dir {
				return e.Name + "/"
			}
			return e.Name
		}
		slices.SortFunc(t.Entries, func(a, b object.TreeEntry) int { return strings.Compare(sortKey(a), sortKey(b)) })
		obj := s.NewEncodedObject()
		if err := t.Encode(obj); err != nil {
			return plumbing.ZeroHash, err
		}
		return s.SetEncodedObject(obj)
	}
	return store(root)
}

// appLatency is P1 for apps: runs apps, one after the other, each with its own repository (so
// one app's push never changes another's revision). For each: create → the operator's push that
// holds its files; then the receiver annotation; push → Synced, and push → Flux applied the
// commit (the floor of push → Synced); and the floor of create → pushed, a raw go-git push of
// the same files.
func appLatency(ctx context.Context, h *cluster, tenant client.Client, g *gitSide, w *appWatch, ns string, runs int) (created, synced, applied, rawFloor []float64, err error) {
	type pushed struct {
		app    *kubeoperav1alpha1.KubeOperaApp
		at     time.Time
		commit string
	}
	var all []pushed
	for i := range runs {
		repo := fmt.Sprintf("p1-app-%02d", i)
		app := benchApp(ns, fmt.Sprintf("lat-%02d", i), g.proxy.repoURL(repo))
		app.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: fluxSecretName}
		want, err := expectedFiles(app)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		start := time.Now()
		if err := h.Client.Create(ctx, app); err != nil {
			return nil, nil, nil, nil, err
		}
		at, err := waitPushed(ctx, g, map[string]map[string]bool{repo: set(want)}, start, time.Minute)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("app %s: %w", app.Name, err)
		}
		created = append(created, ms(at.Sub(start)))
		if err := requestReconcile(ctx, tenant, app); err != nil {
			return nil, nil, nil, nil, err
		}
		commit, err := g.srv.Head(repo, defaultBranch)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		all = append(all, pushed{app: app, at: at, commit: commit})
		files, err := g.srv.Files(repo, defaultBranch, "")
		if err != nil {
			return nil, nil, nil, nil, err
		}
		d, err := rawPush(ctx, g, "floor-"+repo, files)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		rawFloor = append(rawFloor, ms(d))
	}
	deadline := time.Now().Add(syncedTimeout)
	for _, p := range all {
		for {
			s, ok := w.syncedAt(client.ObjectKeyFromObject(p.app))
			a, ok2 := w.appliedAt(p.app, p.commit)
			if ok && ok2 {
				synced = append(synced, ms(s.Sub(p.at)))
				applied = append(applied, ms(a.Sub(p.at)))
				break
			}
			if time.Now().After(deadline) {
				return created, synced, applied, rawFloor, fmt.Errorf("app %s: Synced=%v, Flux applied %s=%v after %s", p.app.Name, ok, p.commit, ok2, syncedTimeout)
			}
			time.Sleep(50 * time.Millisecond) // polling what the informers recorded; the times come from the events
		}
	}
	return created, synced, applied, rawFloor, nil
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// gitRun is one P4 measurement.
type gitRun struct {
	wall, floor     time.Duration
	apiFloor        time.Duration // the bare client's share of floor
	gitFloor        time.Duration // the raw pushes' share of floor
	pushes, commits int
	missing, extra  int
}

// gitThroughput is P4: n apps created at once (parallel writers) in ns, spread over repos
// repositories; wall time until every repository holds every app's files; pushes, commits, lost
// and stray files; and the floor: the API work every app needs before its first push, done by a
// bare client with the app controller's concurrency (apiFloorWork), then one raw commit+push per
// repository of the same files (rawPush), all repositories at once.
func gitThroughput(ctx context.Context, h *cluster, g *gitSide, ns, label string, n, repos int) (gitRun, error) {
	var run gitRun
	apps := make([]*kubeoperav1alpha1.KubeOperaApp, n)
	want := map[string]map[string]bool{}
	for i := range n {
		repo := fmt.Sprintf("p4-%s-%02d", label, i%repos)
		apps[i] = benchApp(ns, fmt.Sprintf("app-%03d", i), g.proxy.repoURL(repo))
		files, err := expectedFiles(apps[i])
		if err != nil {
			return run, err
		}
		if want[repo] == nil {
			want[repo] = map[string]bool{}
		}
		for _, f := range files {
			want[repo][f] = true
		}
	}
	start := time.Now()
	if err := parallel(writers, n, func(i int) error { return h.Client.Create(ctx, apps[i]) }); err != nil {
		return run, err
	}
	last, err := waitPushed(ctx, g, want, start, pushedTimeout)
	if err != nil {
		return run, err
	}
	run.wall = last.Sub(start)
	events, _ := g.proxy.snapshot()
	for _, e := range events {
		if _, ours := want[e.repo]; ours && e.push && e.operator && !e.at.Before(start) {
			run.pushes++
		}
	}
	contents := map[string]map[string]string{}
	for repo, files := range want {
		commits, err := g.srv.Commits(repo, defaultBranch)
		if err != nil {
			return run, err
		}
		run.commits += len(commits)
		missing, extra, err := repoComplete(g, repo, files)
		if err != nil {
			return run, err
		}
		run.missing += missing
		run.extra += extra
		if contents[repo], err = g.srv.Files(repo, defaultBranch, ""); err != nil {
			return run, err
		}
	}
	astart := time.Now()
	if err := parallel(writers, n, func(i int) error { return apiFloorWork(ctx, h.Client, apps[i]) }); err != nil {
		return run, fmt.Errorf("floor API work: %w", err)
	}
	run.apiFloor = time.Since(astart)
	var mu sync.Mutex
	fstart := time.Now()
	var wg sync.WaitGroup
	var ferr error
	for repo, files := range contents {
		wg.Go(func() {
			if _, err := rawPush(ctx, g, "floor-"+repo, files); err != nil {
				mu.Lock()
				ferr = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	run.gitFloor = time.Since(fstart)
	run.floor = run.apiFloor + run.gitFloor
	return run, ferr
}

// apiFloorWork is the API work an app needs before its first push, done once by a bare client:
// read its Tenant, the Tenant's kubeconfig Secret and the Git Secret, and record where its folder
// goes (one write; a ConfigMap per app here, which the operator does not watch, so the floor
// starts no reconcile).
func apiFloorWork(ctx context.Context, c client.Client, app *kubeoperav1alpha1.KubeOperaApp) error {
	if err := c.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: tenantName}, &tenantv1alpha1.Tenant{}); err != nil {
		return err
	}
	for _, name := range []string{"vc-" + tenantName, gitSecretName} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: app.Namespace, Name: name}, &corev1.Secret{}); err != nil {
			return err
		}
	}
	return c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: app.Namespace, Name: "floor-placement-" + app.Name},
		Data:       map[string]string{"url": app.Spec.Git.URL, "path": render.Path(app, render.DefaultPathPrefix)},
	})
}
