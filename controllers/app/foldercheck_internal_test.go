package app

import (
	"context"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
)

// A commit the Git writer has not seen (pushed by someone else) moves every Kustomization of
// the branch; the events of Synced apps start no pass: their branch's folder check fetches the
// commit once and offers only the app whose folder the commit changed.
func TestACommitFromElsewhereCostsOneFetchAndOnlyTheChangedAppsPasses(t *testing.T) {
	h := newHeldBranch(t)
	g, tr := h.g, h.tr
	offered := make(chan types.NamespacedName, 20)
	tr.vclusterWatches = &vclusterWatches{pacer: newTenantPacer(10, 100, func(app types.NamespacedName) { offered <- app })}

	// Five Synced apps on the branch, each at the commit of its folder.
	names := []string{"a0", "a1", "a2", "a3", "a4"}
	apps := map[string]*kubeoperav1alpha1.KubeOperaApp{}
	for _, name := range names {
		a := h.app.DeepCopy()
		a.Name = name
		a.Status.Path, a.Status.Commit = "apps/ns/"+name, h.write(name, "1")
		apimeta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: kubeoperav1alpha1.ConditionSynced,
			Status: metav1.ConditionTrue, Reason: kubeoperav1alpha1.ReasonSucceeded, Message: "m", ObservedGeneration: a.Generation})
		apps[name] = a
	}

	// Another writer of the repository changes a4's folder, then adds a folder no app owns.
	elsewhere := gitops.NewWriter(t.TempDir())
	push := func(path, owner string) string {
		res, err := elsewhere.Apply(context.Background(), h.repo, gitops.Change{
			AppKey: "ns/" + owner, Path: path, Owner: gitops.Owner{ID: "uid-" + owner, Name: "ns/" + owner},
			Files: map[string][]byte{"deployment.yaml": []byte("from elsewhere")}, Message: "elsewhere: " + path})
		g.Expect(err).NotTo(HaveOccurred())
		return res.Commit
	}
	push("apps/ns/a4", "a4")
	head := push("apps/ns/handmade", "handmade")
	_, known, _ := tr.writer.SameFolderKnown(h.repo, "apps/ns/a0", apps["a0"].Status.Commit, head)
	g.Expect(known).To(BeFalse(), "the operator's writer has not seen the commit")

	// Flux applies the head everywhere: no event starts a pass at once.
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Status: kustomizev1.KustomizationStatus{
		ObservedGeneration: 1, LastAppliedRevision: "main@sha1:" + head,
		Conditions: []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: "R", Message: "m"}}}}
	fetchesBefore := h.fetches.Load()
	tenantKey := types.NamespacedName{Namespace: "ns", Name: "t1"}
	for _, name := range names {
		g.Expect(tr.kustomizationConcerns(t.Context(), tenantKey, apps[name], ks)).To(BeFalse(), "app %s: a pass before the commit was read", name)
	}

	g.Eventually(offered, 10*time.Second).Should(Receive(Equal(types.NamespacedName{Namespace: "ns", Name: "a4"})), "the app whose folder changed")
	g.Eventually(func() int {
		tr.folderChecks.mu.Lock()
		defer tr.folderChecks.mu.Unlock()
		return len(tr.folderChecks.pending)
	}).
		Should(BeZero(), "the branch's folder check ended")
	// The goroutine ended after its last round: every offer it made is in the channel.
	g.Expect(offered).NotTo(Receive(), "an app whose folder is unchanged was offered")
	g.Expect(h.fetches.Load()-fetchesBefore).To(BeEquivalentTo(1), "one fetch of the new commit for all five apps")

	// Now the writer knows the commit: the same events are answered on the watch, no fetch.
	for _, name := range names[:4] {
		g.Expect(tr.kustomizationConcerns(t.Context(), tenantKey, apps[name], ks)).To(BeFalse())
	}
	g.Expect(tr.kustomizationConcerns(t.Context(), tenantKey, apps["a4"], ks)).To(BeTrue(), "a4's folder changed: a pass")
	g.Expect(h.fetches.Load() - fetchesBefore).To(BeEquivalentTo(1))
}
