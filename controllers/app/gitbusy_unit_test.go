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
