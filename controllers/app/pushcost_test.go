package app_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/metrics"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// A push to a branch several apps share moves every app's Kustomization to the new head when
// Flux applies it; only the app whose folder the push changed gets a pass. The others, Synced,
// their folders the same at the new head (the Git writer's clone holds the commit it pushed), get
// no pass: no status write, no Git fetch, no vCluster read.
func TestAPushCostsOnlyTheAppsWhoseFolderChanged(t *testing.T) {
	f := newFixture(t)
	names := syncedOnOneBranch(f, "shared", 5)
	head := f.head()

	// One app changes: one commit on the shared branch.
	changed, unchanged := names[0], names[1:]
	f.update(changed, func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "nginx:1.28" })
	f.g.Eventually(f.head).ShouldNot(Equal(head))
	f.g.Eventually(func() string { return f.get(changed).Status.Commit }).Should(Equal(f.head()))
	pushed := f.head()
	passesBefore := map[string]int{}
	for _, name := range unchanged {
		passesBefore[name] = passes.of(f.ns, name)
	}
	fetchesBefore := gitServer.Fetches(f.repo)
	statusWritesBefore := hostRequests.writes("/kubeoperaapps/")

	// Flux applies the new head everywhere, the changed app's Kustomization last: the watch
	// delivers in order, so once the changed app is Synced the others' events were handled.
	for _, name := range append(unchanged, changed) {
		a := f.get(name)
		setKustomizationStatus(f, render.FluxName(a), "main@sha1:"+pushed, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: main@sha1:"+pushed)
	}
	a := f.waitCondition(changed, kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Expect(a.Status.AppliedRevision).To(Equal("main@sha1:" + pushed))

	for _, name := range unchanged {
		f.g.Expect(passes.of(f.ns, name)).To(Equal(passesBefore[name]), "app %s got a pass for a push that left its folder as it was", name)
		f.g.Expect(findCondition(f.get(name), kubeoperav1alpha1.ConditionSynced).Status).To(Equal(metav1.ConditionTrue))
	}
	writes := 0
	for path, count := range hostRequests.writes("/kubeoperaapps/") {
		if before := statusWritesBefore[path]; count > before {
			for _, name := range unchanged {
				f.g.Expect(path).NotTo(HaveSuffix("/"+name+"/status"), "a status write of an unchanged app")
			}
			writes += count - before
		}
	}
	t.Logf("Flux applying the push: %d app writes, %d Git fetches", writes, gitServer.Fetches(f.repo)-fetchesBefore)
	f.g.Expect(gitServer.Fetches(f.repo)-fetchesBefore).To(BeNumerically("<=", 1), "Git fetches beyond the changed app's pass")
}

// A commit someone else pushed to the shared branch (a README at the repository's root) moves
// every Kustomization of the branch to a head the Git writer has not seen. No app gets a pass:
// the branch's folder check fetches the commit once and finds every folder unchanged.
func TestACommitFromElsewhereCostsNoPass(t *testing.T) {
	f := newFixture(t)
	names := syncedOnOneBranch(f, "readme", 5)
	n := len(names)

	pushed, err := gitServer.PushOutsideCommit(f.repo, "main", "README.md", "The tenant's applications.\n")
	f.g.Expect(err).NotTo(HaveOccurred())
	passesBefore := map[string]int{}
	for _, name := range names {
		passesBefore[name] = passes.of(f.ns, name)
	}
	fetchesBefore := gitServer.Fetches(f.repo)
	statusWritesBefore := hostRequests.writes("/kubeoperaapps/")
	checksBefore := counterByLabel(t, metrics.AppFolderChecksTotal, "answer")

	for _, name := range names {
		setKustomizationStatus(f, render.FluxName(f.get(name)), "main@sha1:"+pushed, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: main@sha1:"+pushed)
	}
	// Every event answered: unchanged, so none of them can start a pass later.
	f.g.Eventually(func() int {
		return counterByLabel(t, metrics.AppFolderChecksTotal, "answer")[metrics.FolderUnchanged] - checksBefore[metrics.FolderUnchanged]
	}, 30*time.Second).Should(BeNumerically(">=", n))
	checks := counterByLabel(t, metrics.AppFolderChecksTotal, "answer")
	f.g.Expect(checks[metrics.FolderChanged]-checksBefore[metrics.FolderChanged]).To(BeZero(), "a folder reported changed")
	f.g.Expect(checks[metrics.FolderUnanswered]-checksBefore[metrics.FolderUnanswered]).To(BeZero(), "a comparison without an answer")

	for _, name := range names {
		f.g.Expect(passes.of(f.ns, name)).To(Equal(passesBefore[name]), "app %s got a pass for a commit that left its folder as it was", name)
	}
	for path, count := range hostRequests.writes("/kubeoperaapps/") {
		f.g.Expect(count).To(Equal(statusWritesBefore[path]), "a write of an app: %s", path)
	}
	f.g.Expect(gitServer.Fetches(f.repo)-fetchesBefore).To(Equal(1), "one fetch of the new commit for all apps")
}

// syncedOnOneBranch creates n apps named <prefix>-<i> in one Tenant and repository, and writes
// the status Flux writes once it applied the branch head, which holds every app's folder: all
// are Synced.
func syncedOnOneBranch(f *fixture, prefix string, n int) []string {
	f.t.Helper()
	f.addTenant("t1", time.Now())
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("%s-%d", prefix, i))
		f.create(f.newApp(names[i], "t1"))
	}
	for _, name := range names {
		f.waitReady(name)
	}
	head := f.head()
	for _, name := range names {
		setKustomizationStatus(f, render.FluxName(f.get(name)), "main@sha1:"+head, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: main@sha1:"+head)
		f.waitCondition(name, kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	}
	return names
}
