package chaos

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// appArgs are the manager flags of the KubeOperaApp trials: only the App Controller, a Git cache
// that survives the kills (as an emptyDir survives a container restart), and a short read-back
// interval so Synced follows the stand-in Kustomization status within a second.
func appArgs(gitCache string) []string {
	return []string{
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--enable-controlplane-controller=false",
		"--git-cache-dir=" + gitCache, "--app-sync-poll-interval=500ms",
		// The test Git server is plain HTTP on loopback, and it and the vCluster's API server
		// listen on loopback, which the default allow-lists refuse.
		"--app-allow-insecure-git-http",
		"--app-allowed-git-hosts=127.0.0.1", "--app-allowed-vcluster-servers=127.0.0.1",
	}
}

// TestKillAnywhereApp runs the KubeOperaApp scenarios (first placement, a path move, the
// deletion) with the manager SIGKILLed at random moments of each.
func TestKillAnywhereApp(t *testing.T) {
	runTrials(t, 0x61707073, "app ", appTrial)
}

// appFixture is one app's namespace on the host: a Ready Tenant with its exported kubeconfig,
// the Git credentials Secret, and the app, in a repository of its own.
type appFixture struct {
	ns, repo string
	gitURL   string
}

const (
	appName    = "web"
	appTenant  = "t"
	appGitAuth = "git"
)

func newAppFixture(ctx context.Context, g Gomega, ns, repo, gitURL string) *appFixture {
	f := &appFixture{ns: ns, repo: repo, gitURL: gitURL}
	g.Expect(host.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	err := apptest.CreateTenant(ctx, host.Client, testfixture.Tenant(
		testfixture.TenantInNamespace(ns), testfixture.TenantNamed(appTenant), testfixture.TenantCloudSpace("cs-"+ns),
		testfixture.TenantReady(time.Now()),
	))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(host.Client.Create(ctx, apptest.KubeconfigSecret(ns, "vc-"+appTenant, tenantKubeconfig))).To(Succeed())
	g.Expect(host.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: appGitAuth}, Data: gitServer.SecretData(),
	})).To(Succeed())
	return f
}

func (f *appFixture) app() *kubeoperav1alpha1.KubeOperaApp {
	return testfixture.KubeOperaApp(
		testfixture.AppInNamespace(f.ns), testfixture.AppNamed(appName),
		testfixture.AppCloudSpace("cs-"+f.ns), testfixture.AppTenant(appTenant), testfixture.AppExampleWorkload(appName),
		testfixture.AppGitURL(f.gitURL), testfixture.AppGitSecret(appGitAuth),
	)
}

func (f *appFixture) key() types.NamespacedName {
	return types.NamespacedName{Namespace: f.ns, Name: appName}
}

func appTrial(t *testing.T, rng *rand.Rand, i int) (kills int) {
	ctx := t.Context()
	g := newTrialGomega(t, 3*time.Minute, 200*time.Millisecond)
	ns := fmt.Sprintf("chaos-app-%d", i)
	f := newAppFixture(ctx, g, ns, ns, gitServer.URL(ns))
	tr := &trial{t: t, g: g, ctx: ctx, ns: ns, dir: t.TempDir()}
	tr.args = appArgs(tr.dir + "/git")
	defer tr.stop()

	// Phase 1: first placement.
	g.Expect(host.Client.Create(ctx, f.app())).To(Succeed())
	tr.underKills(rng, "placement")
	a := expectAppConverged(ctx, g, f, tr.mgr.Exited)
	g.Expect(render.Path(a, render.DefaultPathPrefix)).To(Equal("apps/" + ns + "/" + appName))

	// Phase 2: a path move. From the moment the new folder is complete in Git it must stay.
	newPath := "apps/" + ns + "/moved/" + appName
	watch := watchFolder(ctx, f.repo, newPath, expectedFiles(g, a, newPath))
	g.Eventually(func() error {
		cur := &kubeoperav1alpha1.KubeOperaApp{}
		if err := host.Client.Get(ctx, f.key(), cur); err != nil {
			return err
		}
		cur.Spec.Git.Path = newPath
		return host.Client.Update(ctx, cur)
	}).Should(Succeed())
	tr.underKills(rng, "move")
	a = expectAppConverged(ctx, g, f, tr.mgr.Exited)
	g.Expect(render.Path(a, render.DefaultPathPrefix)).To(Equal(newPath))
	watch.stop()
	g.Expect(watch.seen()).To(BeTrue(), "the watch saw the new folder (it can fail)")
	g.Expect(watch.violations()).To(BeEmpty(), "the new folder was never removed once complete")

	// Phase 3: the deletion.
	g.Expect(host.Client.Delete(ctx, a)).To(Succeed())
	tr.underKills(rng, "delete")
	expectAppGone(ctx, g, f, a, tr.mgr.Exited)
	return tr.kills
}

// expectAppConverged waits until the app is Ready and Synced for its generation, and its
// repository holds exactly its files, once, at its path (nothing lost, nothing duplicated, no
// old folder), and the Flux objects in the vCluster point there.
func expectAppConverged(ctx context.Context, g Gomega, f *appFixture, exited func() error) *kubeoperav1alpha1.KubeOperaApp {
	a := &kubeoperav1alpha1.KubeOperaApp{}
	g.Eventually(func(g Gomega) {
		g.Expect(exited()).To(Succeed())
		g.Expect(host.Client.Get(ctx, f.key(), a)).To(Succeed())
		for _, c := range []string{kubeoperav1alpha1.ConditionReady, kubeoperav1alpha1.ConditionSynced} {
			cond := apimeta.FindStatusCondition(a.Status.Conditions, c)
			g.Expect(cond).NotTo(BeNil(), "conditions: %+v", a.Status.Conditions)
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "conditions: %+v", a.Status.Conditions)
			g.Expect(cond.ObservedGeneration).To(Equal(a.Generation))
		}
		files, err := gitServer.Files(f.repo, "main", "")
		g.Expect(err).NotTo(HaveOccurred())
		marker := path.Join(render.Path(a, render.DefaultPathPrefix), gitops.OwnerFile)
		g.Expect(files).To(HaveKeyWithValue(marker, ContainSubstring(string(a.UID))), "the folder carries the app's ownership marker")
		files[marker] = ""
		g.Expect(files).To(Equal(expectedFiles(g, a, render.Path(a, render.DefaultPathPrefix))), "the repository holds the app's files once, at its path")
		ks := &kustomizev1.Kustomization{}
		g.Expect(tenant.Client.Get(ctx, client.ObjectKey{Namespace: render.FluxNamespace(a), Name: render.FluxName(a)}, ks)).To(Succeed())
		g.Expect(ks.Spec.Path).To(Equal("./" + render.Path(a, render.DefaultPathPrefix)))
	}).Should(Succeed(), "%s converges", f.ns)
	return a
}

// expectAppGone waits until the app is gone (its finalizer removed), and checks that no Flux
// object or credentials copy is left in the vCluster and no file of it is left in Git.
func expectAppGone(ctx context.Context, g Gomega, f *appFixture, a *kubeoperav1alpha1.KubeOperaApp, exited func() error) {
	g.Eventually(func() bool {
		g.Expect(exited()).To(Succeed())
		return apierrors.IsNotFound(host.Client.Get(ctx, f.key(), &kubeoperav1alpha1.KubeOperaApp{}))
	}).Should(BeTrue(), "%s: the app is gone (no finalizer left)", f.ns)
	fluxNS := render.FluxNamespace(a)
	for _, obj := range []client.Object{&kustomizev1.Kustomization{}, &sourcev1.GitRepository{}} {
		err := tenant.Client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: render.FluxName(a)}, obj)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: no %T left: %v", f.ns, obj, err)
	}
	err := tenant.Client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: render.GitSecretName(a)}, &corev1.Secret{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s: no Git credentials copy left: %v", f.ns, err)
	files, err := gitServer.Files(f.repo, "main", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(BeEmpty(), "%s: no file of the deleted app left in Git", f.ns)
}

// expectedFiles is the folder the App Controller writes for a at dir: the rendered manifests and
// the ownership marker.
func expectedFiles(g Gomega, a *kubeoperav1alpha1.KubeOperaApp, dir string) map[string]string {
	manifests, err := render.Manifests(a)
	g.Expect(err).NotTo(HaveOccurred())
	want := map[string]string{}
	for name, data := range manifests {
		want[path.Join(dir, name)] = string(data)
	}
	// The marker's content (owner and UID) is the Git writer's; its presence is checked here.
	want[path.Join(dir, gitops.OwnerFile)] = ""
	return want
}

// folderWatch polls the head of a repository and records whether dir, once it held exactly
// want, ever lost a file of it.
type folderWatch struct {
	mu       sync.Mutex
	complete bool
	bad      []string
	cancel   context.CancelFunc
	done     chan struct{}
}

func watchFolder(ctx context.Context, repo, dir string, want map[string]string) *folderWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &folderWatch{cancel: cancel, done: make(chan struct{})}
	names := slices.Sorted(maps.Keys(want))
	go func() {
		defer close(w.done)
		for {
			files, err := gitServer.Files(repo, "main", "")
			if err == nil {
				w.observe(files, names, dir)
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

func (w *folderWatch) observe(files map[string]string, names []string, dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var missing []string
	for _, n := range names {
		if _, ok := files[n]; !ok {
			missing = append(missing, n)
		}
	}
	switch {
	case len(missing) == 0:
		w.complete = true
	case w.complete:
		w.bad = append(w.bad, fmt.Sprintf("%s lost %s", dir, strings.Join(missing, ", ")))
	}
}

func (w *folderWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *folderWatch) seen() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.complete
}

func (w *folderWatch) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

// kustomizeStandIn writes what kustomize-controller writes into the status of every
// Kustomization of the vCluster (kustomize-controller does not run here, as in the App
// Controller's suite): Ready for its generation with the head commit of its GitRepository's
// branch as the last applied revision. SIMULATED: kustomize-controller's status; no manifest is
// applied and no finalizer is added (a real one would hold the deletion until it pruned).
func kustomizeStandIn(ctx context.Context) {
	for {
		list := &kustomizev1.KustomizationList{}
		if err := tenant.Client.List(ctx, list); err == nil {
			for i := range list.Items {
				markApplied(ctx, &list.Items[i])
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond): // the stand-in's poll period
		}
	}
}

func markApplied(ctx context.Context, ks *kustomizev1.Kustomization) {
	if !ks.DeletionTimestamp.IsZero() {
		return
	}
	repo := &sourcev1.GitRepository{}
	if err := tenant.Client.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: ks.Spec.SourceRef.Name}, repo); err != nil || repo.Spec.Reference == nil {
		return
	}
	name := strings.TrimSuffix(path.Base(repo.Spec.URL), ".git")
	head, err := gitServer.Head(name, repo.Spec.Reference.Branch)
	if err != nil || head == "" {
		return
	}
	revision := repo.Spec.Reference.Branch + "@sha1:" + head
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ks.Status.LastAppliedRevision == revision && ks.Status.ObservedGeneration == ks.Generation && ready != nil && ready.Status == metav1.ConditionTrue {
		return
	}
	ks.Status.ObservedGeneration = ks.Generation
	ks.Status.LastAppliedRevision, ks.Status.LastAttemptedRevision = revision, revision
	ks.Status.Conditions = []metav1.Condition{{
		Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.ReconciliationSucceededReason,
		Message: "Applied revision: " + revision, LastTransitionTime: metav1.Now(), ObservedGeneration: ks.Generation,
	}}
	_ = tenant.Client.Status().Update(ctx, ks) // a conflict is retried on the next poll
}
