package app_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// historyOf returns the app's status.history as (generation, commit, applied) triples, newest
// first.
func historyOf(a *kubeoperav1alpha1.KubeOperaApp) []string {
	var out []string
	for _, e := range a.Status.History {
		out = append(out, fmt.Sprintf("%d %s applied=%v", e.Generation, e.Commit, e.AppliedAt != nil))
	}
	return out
}

// TestRevisionHistoryRollsBackAndForth plays the KubeOpera API rolling an app back and forth
// (spec v1, v2, v1 again, v2 again: a rollback is a new generation with an older spec) and reads
// status.history: one entry per pushed commit, newest first, each with its generation, distinct
// commits, appliedAt once Flux applied the entry's commit and never moved after. (That a pass
// finding everything as it is writes nothing, history included, is
// TestSyncedAppInSteadyStateWritesNothing: its app has a history with appliedAt set.)
func TestRevisionHistoryRollsBackAndForth(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	const v1, v2 = "ghcr.io/example/h:1.0.0", "ghcr.io/example/h:2.0.0"
	f.create(f.newApp("h", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = v1 }))
	a := f.waitReady("h")
	c1 := a.Status.Commit
	f.g.Expect(historyOf(a)).To(Equal([]string{fmt.Sprintf("1 %s applied=false", c1)}))
	files1 := f.files(f.path("h"))

	f.fluxApplied("h", c1)
	f.g.Eventually(func() []string { return historyOf(f.get("h")) }).Should(Equal([]string{fmt.Sprintf("1 %s applied=true", c1)}))
	applied1 := f.get("h").Status.History[0].AppliedAt

	c2 := f.setImage("h", v2)
	a = f.get("h")
	f.g.Expect(historyOf(a)).To(Equal([]string{fmt.Sprintf("2 %s applied=false", c2), fmt.Sprintf("1 %s applied=true", c1)}))
	f.fluxApplied("h", c2)
	f.g.Eventually(func() []string { return historyOf(f.get("h")) }).Should(Equal([]string{
		fmt.Sprintf("2 %s applied=true", c2), fmt.Sprintf("1 %s applied=true", c1)}))

	// Rollback: v1's spec again, asked for by someone the KubeOpera API names. Its files are
	// v1's, in a new commit whose trailer says which entry it restores and who asked.
	f.update("h", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Annotations = map[string]string{kubeoperav1alpha1.AnnotationRequestedBy: "alice@example.com"}
	})
	c3 := f.setImage("h", v1)
	f.g.Expect(f.files(f.path("h"))).To(Equal(files1))
	f.fluxApplied("h", c3)
	// And forward again.
	c4 := f.setImage("h", v2)
	f.fluxApplied("h", c4)
	f.waitCondition("h", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Eventually(func() []string { return historyOf(f.get("h")) }).Should(Equal([]string{
		fmt.Sprintf("4 %s applied=true", c4), fmt.Sprintf("3 %s applied=true", c3),
		fmt.Sprintf("2 %s applied=true", c2), fmt.Sprintf("1 %s applied=true", c1)}))
	a = f.get("h")
	f.g.Expect(map[string]bool{c1: true, c2: true, c3: true, c4: true}).To(HaveLen(4), "commits are distinct")

	// The history and Git say the same: each commit's trailer names the app, its generation and
	// the digest of its manifests; the rollback and the roll forward name the entry they restore.
	h := a.Status.History
	f.g.Expect(h[3].Manifests).To(Equal(h[1].Manifests), "v1's manifests twice")
	f.g.Expect(h[2].Manifests).To(Equal(h[0].Manifests), "v2's manifests twice")
	f.g.Expect(h[3].Manifests).NotTo(Equal(h[2].Manifests))
	f.g.Expect([]string{h[0].Restores, h[1].Restores, h[2].Restores, h[3].Restores}).To(Equal([]string{c2, c1, "", ""}))
	for i, c := range []string{c4, c3, c2, c1} {
		want := fmt.Sprintf("\nKubeOperaApp: %s/h uid=%s generation=%d manifests=%s", f.ns, a.UID, 4-i, h[i].Manifests)
		if h[i].Restores != "" {
			want += " restores=" + h[i].Restores
		}
		if i < 2 {
			want += ` requested-by="alice@example.com"`
		}
		f.g.Expect(commitMessageOf(f, c)).To(HaveSuffix(want+"\n"), "commit %d", 4-i)
	}
	// Events are recorded asynchronously.
	f.g.Eventually(func() []string { return eventMessages(f, "h", "Committed") }).Should(
		ContainElement(ContainSubstring("restoring the manifests of commit " + c1[:8])))
	f.g.Expect(a.Status.History[3].AppliedAt).To(Equal(applied1), "an appliedAt is set once")
	for i := 1; i < len(a.Status.History); i++ {
		newer, older := a.Status.History[i-1], a.Status.History[i]
		f.g.Expect(newer.PushedAt.Before(&older.PushedAt)).To(BeFalse(), "entry %d pushed before entry %d", i-1, i)
		f.g.Expect(newer.AppliedAt.Before(newer.PushedAt.DeepCopy())).To(BeFalse(), "entry %d applied before it was pushed", i-1)
	}
}

// TestRevisionHistoryKeepsTheLastEntries pushes RevisionHistoryLimit+2 generations after the
// first: status.history holds the newest RevisionHistoryLimit, newest first.
func TestRevisionHistoryKeepsTheLastEntries(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("many", "t1"))
	a := f.waitReady("many")
	commits := []string{a.Status.Commit}
	const pushes = kubeoperav1alpha1.RevisionHistoryLimit + 2
	for i := range pushes {
		commits = append(commits, f.setImage("many", fmt.Sprintf("ghcr.io/example/many:1.%d.0", i+1)))
	}
	a = f.get("many")
	f.g.Expect(a.Status.History).To(HaveLen(kubeoperav1alpha1.RevisionHistoryLimit))
	var want []string
	for i := range kubeoperav1alpha1.RevisionHistoryLimit {
		n := len(commits) - 1 - i
		want = append(want, fmt.Sprintf("%d %s applied=false", n+1, commits[n]))
	}
	f.g.Expect(historyOf(a)).To(Equal(want))
	f.g.Expect(a.Generation).To(Equal(int64(pushes + 1)))
}

// commitMessageOf is the message of commit sha on the fixture's branch.
func commitMessageOf(f *fixture, sha string) string {
	f.t.Helper()
	for _, c := range f.commits() {
		if c.Hash.String() == sha {
			return c.Message
		}
	}
	f.t.Fatalf("commit %s is not on the branch", sha)
	return ""
}

// eventMessages are the notes of the app's Events of reason, oldest first.
func eventMessages(f *fixture, name, reason string) []string {
	var out []string
	for _, e := range f.events(name) {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// Git keeps the history: an app whose status was lost reads it back from the trailers of its
// branch, with the commits, generations and manifests it had (pushedAt is the commit's time),
// and status.commit is again the commit that last changed its folder, not the branch head.
// Another app's commit on top shows that the walk keeps only the app's own entries.
func TestHistoryIsReadBackFromGitAfterTheStatusWasLost(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("kept", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "ghcr.io/example/k:1" }))
	f.waitReady("kept")
	f.setImage("kept", "ghcr.io/example/k:2")
	c3 := f.setImage("kept", "ghcr.io/example/k:1")
	before := f.get("kept").Status.History
	f.g.Expect(before).To(HaveLen(3))
	f.create(f.newApp("other", "t1"))
	f.waitReady("other")
	f.g.Expect(f.head()).NotTo(Equal(c3), "another app's commit is the head")

	wipeStatus(f, "kept")
	f.pokeAndWait("kept")
	a := f.waitReady("kept")
	f.g.Expect(a.Status.Commit).To(Equal(c3), "the commit that last changed the folder")
	f.g.Expect(a.Status.History).To(HaveLen(3))
	for i, e := range a.Status.History {
		f.g.Expect([]any{e.Generation, e.Commit, e.Manifests, e.Restores}).To(Equal(
			[]any{before[i].Generation, before[i].Commit, before[i].Manifests, before[i].Restores}), "entry %d", i)
		f.g.Expect(e.PushedAt.Time).To(BeTemporally("~", before[i].PushedAt.Time, time.Minute))
	}
	f.g.Expect(a.Status.History[0].Restores).To(Equal(before[2].Commit), "the rollback is part of what Git says")
	f.waitEvent("kept", corev1.EventTypeNormal, "HistoryRestored")
}

// A change pushed by hand to an app's folder is reverted by the next pass, never silently: a
// Warning Event and the ManifestsCommitted condition name the commit that made it. A commit
// outside the folder (a README) is not named.
func TestAChangeMadeOutsideTheOperatorIsRevertedAndReported(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("guarded", "t1"))
	f.waitReady("guarded")
	want := f.files(f.path("guarded"))
	manual, err := gitServer.PushOutsideCommit(f.repo, "main", f.path("guarded")+"/deployment.yaml", "changed by hand\n")
	f.g.Expect(err).NotTo(HaveOccurred())
	readme, err := gitServer.PushOutsideCommit(f.repo, "main", "README.md", "about this repository\n")
	f.g.Expect(err).NotTo(HaveOccurred())

	f.pokeAndWait("guarded")
	e := f.waitEvent("guarded", corev1.EventTypeWarning, "ManualChangeReverted")
	f.g.Expect(e.Note).To(ContainSubstring(manual[:8]))
	f.g.Expect(e.Note).NotTo(ContainSubstring(readme[:8]))
	f.g.Expect(f.files(f.path("guarded"))).To(Equal(want), "the desired state is back")
	// The condition says it while the revert is the app's commit, later passes included.
	f.g.Eventually(func() string {
		return conditionMessage(f.get("guarded"), kubeoperav1alpha1.ConditionManifestsCommitted)
	}).Should(
		ContainSubstring("reverted changes made outside the operator to folder %s in commit %s", f.path("guarded"), manual[:8]))
	f.pokeAndWait("guarded")
	a := f.get("guarded")
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionManifestsCommitted)).To(ContainSubstring(manual[:8]))
	f.g.Expect(commitMessageOf(f, a.Status.Commit)).To(ContainSubstring("uid="+string(a.UID)), "the revert is the app's own commit")
}

// A new app's first commit creates its folder, so there is no history to read back, although a
// new app looks like one whose status was lost (its placement is recorded before its first
// commit): its passes neither read the branch's log (a Git fetch each, and a pass ended for
// every batch of the branch that held the clone meanwhile) nor report HistoryRestored.
func TestNewAppsReadNoHistory(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	const n = 8
	fetchesBefore := gitServer.Fetches(f.repo)
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("new-%d", i))
	}
	// All at once, as a bulk apply creates them.
	created := make(chan error, n)
	for _, name := range names {
		go func() { created <- host.Client.Create(f.ctx, f.newApp(name, "t1")) }()
	}
	for range names {
		f.g.Expect(<-created).To(Succeed())
	}
	for _, name := range names {
		f.waitReady(name)
	}
	fetches := gitServer.Fetches(f.repo) - fetchesBefore
	t.Logf("%d new apps: %d Git fetches", n, fetches)
	f.g.Expect(fetches).To(BeNumerically("<", n), "a fetch per new app: its history was read")
	for _, name := range names {
		for _, e := range f.events(name) {
			f.g.Expect(e.Reason).NotTo(Equal("HistoryRestored"), "app %s: %s", name, e.Note)
		}
		f.g.Expect(f.get(name).Status.History).To(HaveLen(1))
	}
}
