package app_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// setImage changes the app's image and waits until the change is pushed: status.commit moves
// away from the commit before. It returns the new commit.
func (f *fixture) setImage(name, image string) string {
	f.t.Helper()
	before := f.get(name).Status.Commit
	f.update(name, func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = image })
	var commit string
	f.g.Eventually(func(g Gomega) {
		a := f.get(name)
		g.Expect(a.Status.Commit).NotTo(Equal(before))
		c := findCondition(a, kubeoperav1alpha1.ConditionManifestsCommitted)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(a.Generation))
		commit = a.Status.Commit
	}).Should(Succeed())
	return commit
}

// fluxApplied writes what kustomize-controller writes once it applied revision for the app, and
// waits until the app read it back.
func (f *fixture) fluxApplied(name, commit string) *kubeoperav1alpha1.KubeOperaApp {
	f.t.Helper()
	return f.writeApplied(name, commit, false)
}

// fluxAppliedElsewhere writes what kustomize-controller writes once it applied a revision that
// another app's push made: a Synced app whose folder is the same there gets no pass for it
// (TestAPushCostsOnlyTheAppsWhoseFolderChanged), so the test brings its periodic pass forward
// with a poke and waits until the app read the revision back.
func (f *fixture) fluxAppliedElsewhere(name, commit string) *kubeoperav1alpha1.KubeOperaApp {
	f.t.Helper()
	return f.writeApplied(name, commit, true)
}

// writeApplied writes the Kustomization status of an applied commit, pokes the app if asked, and
// waits until the app read the revision back.
func (f *fixture) writeApplied(name, commit string, poke bool) *kubeoperav1alpha1.KubeOperaApp {
	f.t.Helper()
	revision := "main@sha1:" + commit
	setKustomizationStatus(f, f.ns+"-"+name, revision, metav1.ConditionTrue, "ReconciliationSucceeded", "Applied revision: "+revision)
	if poke {
		f.poke(name)
	}
	var a *kubeoperav1alpha1.KubeOperaApp
	f.g.Eventually(func() string {
		a = f.get(name)
		return a.Status.AppliedRevision
	}).Should(Equal(revision))
	return a
}

// warnings counts the Warning Events' occurrences (a repeated Event is one object with a series).
func warnings(events []eventsv1.Event) int {
	n := 0
	for _, e := range events {
		switch {
		case e.Type != corev1.EventTypeWarning:
		case e.Series != nil:
			n += int(e.Series.Count)
		default:
			n++
		}
	}
	return n
}

// TestSyncedHoldsWhileOtherAppsPushToTheBranch: Synced means that Flux applied a revision holding
// the app's current folder, not one exact commit. Two apps share a repository and branch; app b
// pushes twice after app a is Synced, and Flux applies b's first commit (the head has moved on
// to b's second one by then): a's folder is the same there, so a stays Synced, with no Warning
// Event and no push of its own. Once a's own folder changes, a revision holding its old folder
// is not Synced.
func TestSyncedHoldsWhileOtherAppsPushToTheBranch(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("a", "t1"), f.newApp("b", "t1"))
	f.waitReady("a")
	f.waitReady("b")
	a := f.fluxApplied("a", f.head())
	f.waitCondition("a", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	since := findCondition(a, kubeoperav1alpha1.ConditionSynced)
	// Events are recorded asynchronously, in order: the count starts once a's last one (Synced
	// True) is there.
	f.g.Eventually(func() []string { return eventLabels(f, "a") }).Should(ContainElement("Normal Succeeded Synced=True"))
	warningsBefore := warnings(f.events("a"))
	pushesBefore := gitServer.Pushes(f.repo)

	b1 := f.setImage("b", "ghcr.io/example/b:2.0.0")
	b2 := f.setImage("b", "ghcr.io/example/b:3.0.0")
	f.g.Expect(f.head()).To(Equal(b2))
	f.g.Expect(gitServer.Pushes(f.repo)).To(Equal(pushesBefore+2), "b's two pushes")

	// Flux fetched the branch at b1 and applied it for a.
	f.fluxAppliedElsewhere("a", b1)
	a = f.waitCondition("a", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionSynced)).To(ContainSubstring(b1))
	f.g.Expect(findCondition(a, kubeoperav1alpha1.ConditionSynced).LastTransitionTime).To(Equal(since.LastTransitionTime), "Synced flapped")
	// And then b2: still the same folder.
	f.fluxAppliedElsewhere("a", b2)
	a = f.waitCondition("a", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionSynced)).To(ContainSubstring(b2))
	f.g.Expect(warnings(f.events("a"))).To(Equal(warningsBefore), "Warning Events of a while only b pushed")
	f.g.Expect(gitServer.Pushes(f.repo)).To(Equal(pushesBefore+2), "a pushed")

	// a's own change: a revision without it (b2) is not Synced; its own commit is.
	a1 := f.setImage("a", "ghcr.io/example/a:2.0.0")
	f.fluxApplied("a", b2)
	f.waitCondition("a", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied)
	f.fluxApplied("a", a1)
	a = f.waitCondition("a", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	since = findCondition(a, kubeoperav1alpha1.ConditionSynced)
	// b's next push on top of a's change holds a's folder too.
	b3 := f.setImage("b", "ghcr.io/example/b:4.0.0")
	f.fluxAppliedElsewhere("a", b3)
	a = f.waitCondition("a", kubeoperav1alpha1.ConditionSynced, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionSynced)).To(ContainSubstring(b3))
	f.g.Expect(findCondition(a, kubeoperav1alpha1.ConditionSynced).LastTransitionTime).To(Equal(since.LastTransitionTime), "Synced flapped")
}
