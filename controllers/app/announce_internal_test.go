package app

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

// announceChange announces to the Git writer every app it sees created or updated (the
// predicates before it passed only spec and user annotation changes), with the branch the app's
// pass writes, and never an app being deleted: a deleting app's pass removes its folder only once
// Flux has pruned it, so its change is not about to come. It passes every event on.
func TestAnnounceChangeAnnouncesAppsAboutToSubmit(t *testing.T) {
	const url = "https://git.example.com/org/apps.git"
	app := testfixture.KubeOperaApp(testfixture.AppGitURL(url))
	onBranch := app.DeepCopy()
	onBranch.Spec.Git.Branch = "staging"
	deleting := app.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{kubeoperav1alpha1.Finalizer}
	notAnApp := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}

	cases := []struct {
		name string
		send func(p predicate.Funcs) bool
		want []string
	}{
		{"created", func(p predicate.Funcs) bool {
			return p.Create(event.CreateEvent{Object: app})
		}, []string{"ns/web " + url + "@main"}},
		{"updated, to another branch", func(p predicate.Funcs) bool {
			return p.Update(event.UpdateEvent{ObjectOld: app, ObjectNew: onBranch})
		}, []string{"ns/web " + url + "@staging"}},
		{"deletion started", func(p predicate.Funcs) bool {
			return p.Update(event.UpdateEvent{ObjectOld: app, ObjectNew: deleting})
		}, nil},
		{"seen at start while being deleted", func(p predicate.Funcs) bool {
			return p.Create(event.CreateEvent{Object: deleting})
		}, nil},
		{"not an app", func(p predicate.Funcs) bool {
			return p.Create(event.CreateEvent{Object: notAnApp})
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []string
			r := &Reconciler{writer: gitops.NewWriter(t.TempDir(), gitops.WithOnExpect(func(app string, repo gitops.Repo) {
				got = append(got, app+" "+repo.URL+"@"+repo.Branch)
			}, nil))}
			g.Expect(c.send(r.announceChange())).To(BeTrue(), "announceChange passes every event on")
			g.Expect(got).To(Equal(c.want))
		})
	}
}
