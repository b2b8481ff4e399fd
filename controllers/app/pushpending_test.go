package app_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// A reconcile does not hold its worker while its push is pending. The first app's push is held;
// then more apps of the same repository than the manager has workers (suiteOptions: 40) are
// created. Every one of them submits its change (a blocking write would have stopped at 40), no
// status is written while the push is pending, a spec change of a queued app replaces its
// queued change, an app of another repository becomes Ready meanwhile, and once the push is
// released all of them are on the branch in two pushes: the held one and one batch.
func TestWorkersAreFreeWhilePushIsPending(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	other := newFixture(t)
	other.addTenant("t2", time.Now())
	const n = 50 // more than the 40 workers
	name := func(i int) string { return fmt.Sprintf("app-%02d", i) }

	var queued, pushes atomic.Int32
	held, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock) // never leave a push held behind a failed test
	countQueued := func() { queued.Add(1) }
	holdFirst := func() {
		if pushes.Add(1) == 1 {
			close(held)
			select {
			case <-release:
			case <-time.After(2 * timeout):
				t.Errorf("the held push was never released")
			}
		}
	}
	onQueued.Store(&countQueued)
	beforePush.Store(&holdFirst)
	t.Cleanup(func() { onQueued.Store(nil); beforePush.Store(nil) })

	f.create(f.newApp(name(0), "t1"))
	select {
	case <-held:
	case <-time.After(timeout):
		t.Fatal("the first app's push never started")
	}
	for i := 1; i < n; i++ {
		f.create(f.newApp(name(i), "t1"))
	}
	// Every app submitted its change while the first push is still held.
	f.g.Eventually(queued.Load).Should(BeNumerically(">=", n))

	// A queued app's spec changes: its pass submits the new content, which replaces the queued one.
	f.update(name(7), func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "ghcr.io/example/app-07:2.0.0" })
	f.g.Eventually(queued.Load).Should(BeNumerically(">=", n+1))

	// A worker is free for an app of another repository.
	other.create(other.newApp("unrelated", "t2"))
	other.waitReady("unrelated")
	f.g.Expect(pushes.Load()).To(Equal(int32(2)), "the first push is still held; the other repository pushed once")

	// No status write while the push is pending, beyond the placement recorded before the write
	// (the annotation, patched with the finalizer, then the status).
	for i := range n {
		writes := statusWrites(f.ns, name(i))
		f.g.Expect(writes).To(Equal(1), "%s: status written while its push is pending", name(i))
		a := f.get(name(i))
		f.g.Expect(a.Annotations).To(HaveKey(kubeoperav1alpha1.AnnotationPlacement), name(i))
		f.g.Expect(a.Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer), name(i))
		// Other passes read the placement from the cache (the Tenant index maps the vCluster's
		// Kustomization events to the app): it is in the status before the push.
		f.g.Expect(a.Status.Tenant).NotTo(BeNil(), name(i))
		f.g.Expect(a.Status.Path).To(Equal(f.path(name(i))), name(i))
		f.g.Expect(a.Status.Commit).To(BeEmpty(), name(i))
		f.g.Expect(findCondition(a, kubeoperav1alpha1.ConditionReady)).To(BeNil(), name(i))
	}

	unblock()
	for i := range n {
		a := f.waitReady(name(i))
		f.g.Expect(a.Status.Commit).NotTo(BeEmpty(), name(i))
	}
	for i := range n {
		f.g.Expect(mapKeys(f.files(f.path(name(i))))).To(ConsistOf("deployment.yaml", "service.yaml", "kustomization.yaml"), name(i))
	}
	f.g.Expect(f.files(f.path(name(7)))["deployment.yaml"]).To(ContainSubstring("app-07:2.0.0"))
	commits := f.commits()
	t.Logf("%d apps with 40 workers: %d commits in the repository", n, len(commits))
	f.g.Expect(commits).To(HaveLen(2), "the held push and one batch of every other app")
	// The superseded content of app-07 was never pushed.
	for _, c := range commits {
		tree, err := c.Tree()
		f.g.Expect(err).NotTo(HaveOccurred())
		file, err := tree.File(f.path(name(7)) + "/deployment.yaml")
		if err != nil {
			continue
		}
		content, err := file.Contents()
		f.g.Expect(err).NotTo(HaveOccurred())
		f.g.Expect(content).NotTo(ContainSubstring("app-07:1.0.0"), "superseded content was pushed")
	}
	// The pass that read the push's outcome wrote the status once.
	for i := range n {
		f.g.Expect(statusWrites(f.ns, name(i))).To(BeNumerically(">=", 2), name(i))
	}
}

// statusWrites is the number of status writes of the app the host API server received.
func statusWrites(ns, name string) int {
	total := 0
	for k, v := range hostRequests.writes("/namespaces/" + ns + "/kubeoperaapps/" + name + "/status") {
		if strings.HasSuffix(k, "/"+name+"/status") {
			total += v
		}
	}
	return total
}

// The outcome of a push is the app's until a status records it: a pass that read it and could
// not write its status (here the write is refused once; a pass that ends waiting for a branch
// another batch holds is the other way) leaves it for the next pass, which records the new
// commit. Fails when the outcome is dropped as soon as it is read: the next pass submits again,
// the branch already holds the folder (no change), and status.commit stays at the old commit.
func TestAPushOutcomeSurvivesAPassThatWritesNoStatus(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("web", "t1"))
	f.waitReady("web")
	before := f.get("web").Status.Commit
	f.g.Expect(before).NotTo(BeEmpty())

	// The first status write that records a commit other than the old one is refused.
	var refused atomic.Int32
	refuse := func(o client.Object) error {
		if a, ok := o.(*kubeoperav1alpha1.KubeOperaApp); ok && a.Name == "web" && a.Status.Commit != before && refused.CompareAndSwap(0, 1) {
			return apierrors.NewServiceUnavailable("test: the status write that records the new commit is lost")
		}
		return nil
	}
	statusPatchHook.Store(&refuse)
	t.Cleanup(func() { statusPatchHook.Store(nil) })

	f.update("web", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "nginx:1.28" })
	f.g.Eventually(f.head).ShouldNot(Equal(before))
	f.g.Eventually(refused.Load).Should(BeEquivalentTo(1), "the status write was never refused")
	pushed := f.head()
	f.g.Eventually(func() string { return f.get("web").Status.Commit }).Should(Equal(pushed), "status.commit lost the pushed commit")
	a := f.get("web")
	f.g.Expect(a.Status.History).NotTo(BeEmpty())
	f.g.Expect(a.Status.History[0].Commit).To(Equal(pushed))
	f.g.Expect(a.Status.History[0].Generation).To(Equal(a.Generation))
}
