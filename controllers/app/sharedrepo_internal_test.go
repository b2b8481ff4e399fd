package app

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// One repository, whatever form its URL is written in.
func TestRepositoryKey(t *testing.T) {
	g := NewWithT(t)
	const want = "git.example.com/org/apps"
	for _, u := range []string{
		"https://git.example.com/org/apps.git", "https://git.example.com/org/apps", "https://GIT.example.com/org/apps/",
		"https://git.example.com:443/org/apps.git", "ssh://git@git.example.com/org/apps.git", "ssh://git@git.example.com:2222/org/apps",
		"git@git.example.com:org/apps.git", "http://user@git.example.com/org/apps.git/",
	} {
		g.Expect(repositoryKey(u)).To(Equal(want), u)
	}
	g.Expect(repositoryKey("https://git.example.com/org/apps-2.git")).NotTo(Equal(want))
	g.Expect(repositoryKey("https://git.example.com/other/apps.git")).NotTo(Equal(want))
	g.Expect(repositoryKey("/srv/git/apps")).To(Equal("/srv/git/apps"))
}

// A repository belongs to the CloudSpace of its oldest app: an app of another CloudSpace naming
// it in another form is refused, one of the same CloudSpace (in any namespace) is not, and the
// flag allows sharing. The holder leaving the repository brings the refused app back.
func TestRepositoryBelongsToTheCloudSpaceOfItsOldestApp(t *testing.T) {
	g := NewWithT(t)
	created := func(d time.Duration) testfixture.AppMod {
		return testfixture.AppCreated(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(d))
	}
	holder := testfixture.KubeOperaApp(testfixture.AppInNamespace("team-a"), testfixture.AppNamed("first"), created(0))
	sibling := testfixture.KubeOperaApp(testfixture.AppInNamespace("team-a2"), testfixture.AppNamed("sibling"), created(time.Hour))
	intruder := testfixture.KubeOperaApp(testfixture.AppInNamespace("team-b"), testfixture.AppNamed("intruder"), created(2*time.Hour),
		testfixture.AppCloudSpace("cs-2"), testfixture.AppGitURL("git@GIT.example.com:apps"))
	tr := newTestReconciler(t, nil, holder, sibling, intruder)
	ctx := context.Background()

	g.Expect(tr.checkRepositoryHolder(ctx, sibling)).To(Succeed(), "the same CloudSpace in another namespace")
	g.Expect(tr.checkRepositoryHolder(ctx, holder)).To(Succeed())
	err := tr.checkRepositoryHolder(ctx, intruder)
	g.Expect(err).To(MatchError(errRepositoryShared))
	g.Expect(err.Error()).To(ContainSubstring(`holds the folders of CloudSpace "cs-1" (app team-a/first)`))
	g.Expect(err.Error()).To(ContainSubstring("--app-allow-shared-repositories"))
	g.Expect(tr.appsWaitingForTheRepository(ctx, holder)).To(ConsistOf(HaveField("NamespacedName", client.ObjectKeyFromObject(intruder))))
	g.Expect(tr.appsWaitingForTheRepository(ctx, intruder)).To(ConsistOf(
		HaveField("NamespacedName", client.ObjectKeyFromObject(holder)), HaveField("NamespacedName", client.ObjectKeyFromObject(sibling))))

	// An app that has written to the repository holds it, however old the others are: one
	// created in the same second (or earlier) with nothing written never displaces it.
	early := testfixture.KubeOperaApp(testfixture.AppInNamespace("aaa"), testfixture.AppNamed("early"), created(-time.Hour), testfixture.AppCloudSpace("cs-3"))
	g.Expect(tr.host.Create(ctx, early)).To(Succeed())
	err = tr.checkRepositoryHolder(ctx, sibling)
	g.Expect(err).To(MatchError(errRepositoryShared), "nothing written yet: the oldest app holds it")
	placed := holder.DeepCopy()
	g.Expect(tr.host.Get(ctx, client.ObjectKeyFromObject(holder), placed)).To(Succeed())
	placed.Status.Repository, placed.Status.Path = "https://git.example.com/apps", "apps/team-a/first"
	g.Expect(tr.host.Status().Update(ctx, placed)).To(Succeed())
	g.Expect(tr.checkRepositoryHolder(ctx, sibling)).To(Succeed(), "the app that wrote holds it")
	err = tr.checkRepositoryHolder(ctx, early)
	g.Expect(err).To(MatchError(errRepositoryShared))
	g.Expect(err.Error()).To(ContainSubstring("(app team-a/first)"))

	tr.Options.AllowSharedRepositories = true
	g.Expect(tr.checkRepositoryHolder(ctx, intruder)).To(Succeed())
	g.Expect(tr.appsWaitingForTheRepository(ctx, holder)).To(BeEmpty())
}

// The events after which another CloudSpace may hold a repository.
func TestLeavesRepository(t *testing.T) {
	g := NewWithT(t)
	old := testfixture.KubeOperaApp()
	moved := testfixture.KubeOperaApp(testfixture.AppGitURL("https://git.example.com/other.git"))
	sameRepo := testfixture.KubeOperaApp(testfixture.AppGitURL("https://git.example.com/apps"))
	deleting := testfixture.KubeOperaApp(testfixture.AppDeleting(time.Now()))
	relabelled := testfixture.KubeOperaApp(testfixture.AppCloudSpace("cs-2"))
	g.Expect(leavesRepository.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: moved})).To(BeTrue())
	g.Expect(leavesRepository.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: deleting})).To(BeTrue())
	g.Expect(leavesRepository.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: relabelled})).To(BeTrue())
	g.Expect(leavesRepository.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: sameRepo})).To(BeFalse(), "the same repository")
	g.Expect(leavesRepository.Update(event.UpdateEvent{ObjectOld: deleting, ObjectNew: deleting})).To(BeFalse())
	g.Expect(leavesRepository.Delete(event.DeleteEvent{Object: old})).To(BeTrue())
	g.Expect(leavesRepository.Create(event.CreateEvent{Object: old})).To(BeFalse())
}
