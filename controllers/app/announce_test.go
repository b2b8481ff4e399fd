package app_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
)

// announcements records, in order, what the Git writer is told about the apps of one namespace:
// "expect <url>@<branch>" for an announcement, "unexpect" for a withdrawal (a pass ended, or the
// app's change was submitted).
type announcements struct {
	ns  string
	mu  sync.Mutex
	log map[string][]string
}

// record installs the Git writer hooks for f's namespace until the test ends.
func (a *announcements) record(t *testing.T) {
	expect := func(app string, repo gitops.Repo) { a.add(app, "expect "+repo.URL+"@"+repo.Branch) }
	unexpect := func(app string) { a.add(app, "unexpect") }
	onExpect.Store(&expect)
	onUnexpect.Store(&unexpect)
	t.Cleanup(func() { onExpect.Store(nil); onUnexpect.Store(nil) })
}

func (a *announcements) add(app, what string) {
	ns, name, ok := strings.Cut(app, "/")
	if !ok || ns != a.ns {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log[name] = append(a.log[name], what)
}

// of returns the app's record so far.
func (a *announcements) of(name string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.log[name]...)
}

// expects returns the app's announcements so far.
func (a *announcements) expects(name string) []string {
	var out []string
	for _, e := range a.of(name) {
		if strings.HasPrefix(e, "expect ") {
			out = append(out, e)
		}
	}
	return out
}

// An app that is created, or whose spec changes, is announced to the Git writer with the branch
// its pass writes, before that pass; every pass withdraws the announcement when it ends, a pass
// that fails before its submit too. A change of status only (the operator's own status writes
// and anyone else's) and the start of a deletion are not announced: no change of the app's
// folder is coming from them.
func TestChangesComingToGitAreAnnounced(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	rec := &announcements{ns: f.ns, log: map[string][]string{}}
	rec.record(t)
	branch := "expect " + f.gitURL() + "@main"

	f.create(f.newApp("web", "t1"), f.newApp("gone", "t1"), f.newApp("orphan", "no-such-tenant"))
	f.waitReady("web")
	f.waitReady("gone")
	f.g.Eventually(func() int { return passes.of(f.ns, "orphan") }).Should(BeNumerically(">=", 1))
	// The orphan's pass failed before it submitted anything: the pass withdrew the announcement.
	orphan := rec.of("orphan")
	f.g.Expect(orphan).NotTo(BeEmpty())
	f.g.Expect(orphan[0]).To(Equal(branch))
	f.g.Expect(orphan[1:]).To(And(Not(BeEmpty()), HaveEach("unexpect")), "the orphan's passes withdrew its announcement")
	for _, name := range []string{"web", "gone"} {
		// Created: announced once (the operator's own writes, status, finalizer and placement
		// record, were not announced), and withdrawn by the end of the pass.
		f.g.Expect(rec.expects(name)).To(Equal([]string{branch}), name)
		f.g.Expect(rec.of(name)[0]).To(Equal(branch), "%s: announced before its passes", name)
		f.g.Eventually(func() string { r := rec.of(name); return r[len(r)-1] }).Should(Equal("unexpect"), name)
	}

	// Status only, then a deletion, then a spec change: the watch hands them to the predicates
	// in this order, so once the spec change is announced the first two were already decided.
	web := f.get("web")
	orig := web.DeepCopy()
	web.Status.Conditions = append(web.Status.Conditions, metav1.Condition{Type: "example.com/Touched", Status: metav1.ConditionTrue,
		Reason: "Test", Message: "a status-only change", LastTransitionTime: metav1.Now()})
	f.g.Expect(host.Client.Status().Patch(f.ctx, web, client.MergeFrom(orig))).To(Succeed())
	f.deleteApp("gone")
	f.update("web", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "ghcr.io/example/web:2.0.0" })

	f.g.Eventually(func() []string { return rec.expects("web") }).Should(HaveLen(2), "the spec change is announced")
	f.g.Expect(rec.expects("web")).To(Equal([]string{branch, branch}), "the status-only change was not announced")
	f.g.Eventually(func() string { r := rec.of("web"); return r[len(r)-1] }).Should(Equal("unexpect"))
	f.waitGone("gone")
	f.g.Expect(rec.expects("gone")).To(Equal([]string{branch}), "the deletion was not announced")
}
