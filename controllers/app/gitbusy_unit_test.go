package app

import (
	"context"
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
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// A pass never waits for another batch's network I/O: while a push of another app to the app's
// branch is held, the pass that must compare the app's folder at the applied revision with the
// head ends at once without deciding Synced (no status write), and the app is enqueued when that
// batch is done; the next pass decides.
func TestAPassDoesNotWaitForAnotherBatchOfItsBranch(t *testing.T) {
	g := NewWithT(t)
	srv, err := gittestserver.NewTempGitServer()
	g.Expect(err).NotTo(HaveOccurred())
	srv.AutoCreate()
	g.Expect(srv.StartHTTP()).To(Succeed())
	t.Cleanup(func() { srv.StopHTTP() })

	var armed atomic.Bool
	waiting, release := make(chan struct{}), make(chan struct{})
	var waitOnce, openOnce sync.Once
	open := func() { openOnce.Do(func() { close(release) }) }
	t.Cleanup(open)
	tr := newTestReconciler(t, nil)
	tr.Options.AllowedGitHosts = []string{"127.0.0.1"}
	tr.writer = gitops.NewWriter(t.TempDir(), gitops.WithBeforePush(func() {
		if armed.Load() {
			waitOnce.Do(func() { close(waiting) })
			<-release
		}
	}))

	a := testApp(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = srv.HTTPAddress() + "/org/apps.git" })
	loc := tr.specLocation(a)
	repo := gitops.Repo{URL: a.Spec.Git.URL, Branch: render.Branch(a)}
	write := func(app, content string) string {
		res, err := tr.writer.Apply(context.Background(), repo, gitops.Change{
			AppKey: "ns/" + app, Path: "apps/ns/" + app, Owner: gitops.Owner{ID: "uid-" + app, Name: "ns/" + app},
			Files: map[string][]byte{"deployment.yaml": []byte(content)}, Message: "test: " + app})
		g.Expect(err).NotTo(HaveOccurred())
		return res.Commit
	}
	g.Expect(loc.path).To(Equal("apps/ns/web"))
	applied := write("web", "1")
	a.Status.Commit = write("web", "2")
	head := write("other", "1")

	// Another app's push to the branch is held: its batch holds the clone.
	armed.Store(true)
	held, err := tr.writer.Submit(context.Background(), repo, gitops.Change{
		AppKey: "ns/third", Path: "apps/ns/third", Owner: gitops.Owner{ID: "uid-third", Name: "ns/third"},
		Files: map[string][]byte{"deployment.yaml": []byte("x")}, Message: "test: third"}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	<-waiting

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
	g.Expect(tr.waitForGit(context.Background(), s, busy)).To(BeTrue())
	g.Expect(s.waitingForGit).To(BeTrue(), "a pass that waits for Git writes no status")
	g.Expect(apimeta.FindStatusCondition(a.Status.Conditions, kubeoperav1alpha1.ConditionSynced)).To(BeNil(), "Synced is not decided")
	g.Consistently(q.Len, 200*time.Millisecond, 20*time.Millisecond).Should(BeZero(), "enqueued before the batch ended")

	open()
	<-held.Done()
	g.Eventually(q.Len).Should(Equal(1), "the app is enqueued once the batch is done")
	item, _ := q.Get()
	g.Expect(item.NamespacedName).To(Equal(appKey))

	_, err = tr.observeSync(context.Background(), s)
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
	g := NewWithT(t)
	srv, err := gittestserver.NewTempGitServer()
	g.Expect(err).NotTo(HaveOccurred())
	srv.AutoCreate()
	g.Expect(srv.StartHTTP()).To(Succeed())
	t.Cleanup(func() { srv.StopHTTP() })

	var armed atomic.Bool
	waiting, release := make(chan struct{}), make(chan struct{})
	var waitOnce, openOnce sync.Once
	open := func() { openOnce.Do(func() { close(release) }) }
	t.Cleanup(open)
	tr := newTestReconciler(t, nil)
	tr.writer = gitops.NewWriter(t.TempDir(), gitops.WithBeforePush(func() {
		if armed.Load() {
			waitOnce.Do(func() { close(waiting) })
			<-release
		}
	}))
	offered := make(chan types.NamespacedName, 10)
	tr.vclusterWatches = &vclusterWatches{pacer: newTenantPacer(10, 100, func(app types.NamespacedName) { offered <- app })}

	a := testApp(func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = srv.HTTPAddress() + "/org/apps.git" })
	repo := gitops.Repo{URL: a.Spec.Git.URL, Branch: render.Branch(a)}
	write := func(app, content string) string {
		res, err := tr.writer.Apply(context.Background(), repo, gitops.Change{
			AppKey: "ns/" + app, Path: "apps/ns/" + app, Owner: gitops.Owner{ID: "uid-" + app, Name: "ns/" + app},
			Files: map[string][]byte{"deployment.yaml": []byte(content)}, Message: "test: " + app})
		g.Expect(err).NotTo(HaveOccurred())
		return res.Commit
	}
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
	armed.Store(true)
	held, err := tr.writer.Submit(context.Background(), repo, gitops.Change{
		AppKey: "ns/third", Path: "apps/ns/third", Owner: gitops.Owner{ID: "uid-third", Name: "ns/third"},
		Files: map[string][]byte{"deployment.yaml": []byte("x")}, Message: "test: third"}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	<-waiting
	g.Expect(tr.kustomizationConcerns(ctx, tenantKey, a, applied(othersAgain))).To(BeFalse(), "a pass while the clone is in use")
	g.Expect(tr.kustomizationConcerns(ctx, tenantKey, a, applied(webAgain))).To(BeFalse(), "a pass while the clone is in use")
	g.Consistently(offered, 200*time.Millisecond).ShouldNot(Receive(), "offered before the clone was free")
	open()
	<-held.Done()
	g.Eventually(offered).Should(Receive(Equal(appKey)), "the folder changed: offered once the clone is free")
	g.Consistently(offered, 200*time.Millisecond).ShouldNot(Receive(), "offered for another app's commit")
}
