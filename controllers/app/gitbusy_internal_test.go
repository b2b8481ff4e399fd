package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	gittestserver "github.com/fluxcd/pkg/gittestserver"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// heldBranch is a test reconciler whose Git writer writes to a Git server on loopback and, once
// hold is called, holds the next push until open, and an app of that repository.
type heldBranch struct {
	g     Gomega
	tr    *testReconciler
	app   *kubeoperav1alpha1.KubeOperaApp
	repo  gitops.Repo
	armed atomic.Bool
	// waiting is closed when the held push waits; release lets it go.
	waiting, release   chan struct{}
	waitOnce, openOnce sync.Once
	// fetches counts the fetches (git-upload-pack) the Git server answered.
	fetches atomic.Int64
}

func newHeldBranch(t *testing.T) *heldBranch {
	g := NewWithT(t)
	srv, err := gittestserver.NewTempGitServer()
	g.Expect(err).NotTo(HaveOccurred())
	srv.AutoCreate()
	g.Expect(srv.StartHTTP()).To(Succeed())
	t.Cleanup(func() { srv.StopHTTP() })
	h := &heldBranch{g: g, tr: newTestReconciler(t, nil), waiting: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(h.open)
	h.tr.Options.AllowedGitHosts = []string{"127.0.0.1"}
	h.tr.writer = gitops.NewWriter(t.TempDir(), gitops.WithBeforePush(func() {
		if h.armed.Load() {
			h.waitOnce.Do(func() { close(h.waiting) })
			<-h.release
		}
	}))
	// The apps reach the server through a proxy that counts its fetches.
	upstream, err := url.Parse(srv.HTTPAddress())
	g.Expect(err).NotTo(HaveOccurred())
	forward := httputil.NewSingleHostReverseProxy(upstream)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			h.fetches.Add(1)
		}
		forward.ServeHTTP(w, r)
	}))
	t.Cleanup(counting.Close)
	h.app = testfixture.KubeOperaApp(testfixture.AppGitURL(counting.URL + "/org/apps.git"))
	h.repo = gitops.Repo{URL: h.app.Spec.Git.URL, Branch: render.Branch(h.app)}
	return h
}

// write commits content as app ns/<app>'s folder apps/ns/<app> and returns the commit.
func (h *heldBranch) write(app, content string) string {
	res, err := h.tr.writer.Apply(context.Background(), h.repo, gitops.Change{
		AppKey: "ns/" + app, Path: "apps/ns/" + app, Owner: gitops.Owner{ID: "uid-" + app, Name: "ns/" + app},
		Files: map[string][]byte{"deployment.yaml": []byte(content)}, Message: "test: " + app})
	h.g.Expect(err).NotTo(HaveOccurred())
	return res.Commit
}

// hold submits another app's change and returns once its push is held: its batch holds the
// branch's clone until open.
func (h *heldBranch) hold() *gitops.Pending {
	h.armed.Store(true)
	held, err := h.tr.writer.Submit(context.Background(), h.repo, gitops.Change{
		AppKey: "ns/third", Path: "apps/ns/third", Owner: gitops.Owner{ID: "uid-third", Name: "ns/third"},
		Files: map[string][]byte{"deployment.yaml": []byte("x")}, Message: "test: third"}, nil)
	h.g.Expect(err).NotTo(HaveOccurred())
	<-h.waiting
	return held
}

func (h *heldBranch) open() { h.openOnce.Do(func() { close(h.release) }) }

// A pass never waits for another batch's network I/O: while a push of another app to the app's
// branch is held, the pass that must compare the app's folder at the applied revision with the
// head ends at once without deciding Synced (no status write), and the app is enqueued when that
// batch is done; the next pass decides.
func TestAPassDoesNotWaitForAnotherBatchOfItsBranch(t *testing.T) {
	h := newHeldBranch(t)
	g, tr, a := h.g, h.tr, h.app
	g.Expect(tr.specLocation(a).path).To(Equal("apps/ns/web"))
	applied := h.write("web", "1")
	a.Status.Commit = h.write("web", "2")
	head := h.write("other", "1")

	// Another app's push to the branch is held: its batch holds the clone.
	held := h.hold()

	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	g.Expect(tr.pushes.start(context.Background(), q)).To(Succeed())
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: kustomizev1.KustomizationStatus{
		ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + applied,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "R", Message: "m"}}}}
	vc := fake.NewClientBuilder().WithScheme(testScheme()).Build()
	s := &scope{app: a, key: appKey, head: head, kustomization: ks, vc: vc}

	// On a goroutine, so that a pass that waited fails the test instead of hanging it.
	ended := make(chan error, 1)
	go func() {
		_, err := tr.observeSync(context.Background(), s)
		ended <- err
	}()
	var busy error
	g.Eventually(ended, 10*time.Second).Should(Receive(&busy), "the pass waited for the held push")
	g.Expect(busy).To(MatchError(gitops.ErrBranchBusy))
	g.Expect(outcome.IsPending(busy)).To(BeTrue(), "a pass that waits for Git hands off: it writes no status")
	tr.handedOff(context.Background(), s, busy)
	g.Expect(apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)).To(BeNil(), "Synced is not decided")
	g.Consistently(q.Len, 200*time.Millisecond, 20*time.Millisecond).Should(BeZero(), "enqueued before the batch ended")

	h.open()
	<-held.Done()
	g.Eventually(q.Len).Should(Equal(1), "the app is enqueued once the batch is done")
	item, _ := q.Get()
	g.Expect(item.NamespacedName).To(Equal(appKey))

	_, err := tr.observeSync(context.Background(), s)
	g.Expect(err).NotTo(HaveOccurred())
	c := apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Reason).To(Equal(kubeoperav1alpha1.ReasonRevisionNotApplied), "the applied revision holds the app's older folder")
}

// An event of a Synced app's Kustomization that reports a revision holding the app's folder
// starts no pass; while the Git writer's clone is in use the question waits for it on a
// goroutine of its own (the watch never does), and then offers the app only if its folder did
// change.
func TestKustomizationEventsWaitForABusyCloneWithoutAPass(t *testing.T) {
	h := newHeldBranch(t)
	g, tr, a, repo := h.g, h.tr, h.app, h.repo
	offered := make(chan types.NamespacedName, 10)
	tr.vclusterWatches = &vclusterWatches{pacer: newTenantPacer(10, 100, func(app types.NamespacedName) { offered <- app })}

	write := h.write
	a.Status.Path, a.Status.Commit = "apps/ns/web", write("web", "1")
	othersOnly := write("other", "1")
	webChanged := write("web", "2")
	apimeta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: kubeoperav1alpha1.ConditionSynced,
		Status: metav1.ConditionTrue, Reason: kubeoperav1alpha1.ReasonSucceeded, Message: "m", ObservedGeneration: a.Generation})
	applied := func(commit string) *kustomizev1.Kustomization {
		return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: kustomizev1.KustomizationStatus{
			ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + commit,
			Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "R", Message: "m"}}}}
	}
	ctx := t.Context()
	tenantKey := types.NamespacedName{Namespace: "ns", Name: "t1"}
	concerns := func(commit string) bool {
		// The clone may be held a moment after a batch's callers have their outcome.
		var worth bool
		g.Eventually(func() bool {
			_, _, freed := tr.writer.SameFolderKnown(repo, "apps/ns/web", a.Status.Commit, commit)
			if freed != nil {
				return false
			}
			worth = tr.kustomizationConcerns(ctx, tenantKey, a, applied(commit))
			return true
		}).Should(BeTrue())
		return worth
	}
	g.Expect(concerns(othersOnly)).To(BeFalse(), "another app's commit: no pass")
	g.Expect(concerns(webChanged)).To(BeTrue(), "the app's folder changed: a pass")
	// The app at its folder's newer commit, and two commits no lookup has read yet: one of
	// another app, one changing the app's folder.
	a.Status.Commit = webChanged
	othersAgain := write("other", "2")
	webAgain := write("web", "3")

	// Another batch holds the clone: no answer now, no pass now.
	held := h.hold()
	g.Expect(tr.kustomizationConcerns(ctx, tenantKey, a, applied(othersAgain))).To(BeFalse(), "a pass while the clone is in use")
	g.Expect(tr.kustomizationConcerns(ctx, tenantKey, a, applied(webAgain))).To(BeFalse(), "a pass while the clone is in use")
	g.Consistently(offered, 200*time.Millisecond).ShouldNot(Receive(), "offered before the clone was free")
	h.open()
	<-held.Done()
	g.Eventually(offered).Should(Receive(Equal(appKey)), "the folder changed: offered once the clone is free")
	g.Consistently(offered, 200*time.Millisecond).ShouldNot(Receive(), "offered for another app's commit")
}
