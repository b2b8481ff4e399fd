package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// A repository holding a large file that compresses well: its pack is far under the compressed
// limit, its content far over the inflated one (suiteOptions). Its app reports
// RepositoryTooLarge with the limit and a Warning Event; an app of another tenant, pushed
// meanwhile, becomes Ready; the manager (both reconcilers' process) keeps running.
func TestARepositoryOverTheInflatedLimitFailsOnlyItsApp(t *testing.T) {
	big := newFixture(t)
	big.addTenant("t1", time.Now())
	const fileSize = 32 << 20
	_, err := gitServer.PushOutsideCommit(big.repo, "main", "assets/zeros.bin", strings.Repeat("\x00", fileSize))
	big.g.Expect(err).NotTo(HaveOccurred())
	big.create(big.newApp("web", "t1"))

	other := newFixture(t)
	other.addTenant("t1", time.Now())
	other.create(other.newApp("web", "t1"))

	a := big.waitCondition("web", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRepositoryTooLarge)
	big.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionReady)).
		To(ContainSubstring(fmt.Sprintf("inflated %d bytes", suiteOptions.MaxGitInflatedSize)))
	big.waitEvent("web", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonRepositoryTooLarge)
	big.g.Expect(big.head()).NotTo(BeEmpty())
	big.g.Expect(big.files(big.path("web"))).To(BeEmpty(), "nothing was written to the oversized repository")

	other.waitReady("web")
	select {
	case err := <-managerDone:
		t.Fatalf("the manager stopped: %v", err)
	default:
	}

	// Deleting the app needs the Git cleanup, which the same limit refuses: it waits (DeleteFailed)
	// until an administrator lets it go without the cleanup (or raises the limit).
	big.deleteApp("web")
	big.waitCondition("web", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonDeleteFailed)
	big.update("web", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Annotations[kubeoperav1alpha1.AnnotationSkipGitCleanup] = "true"
	})
	big.waitGone("web")
}

// A repository that grew past the inflated limit after its app was placed (a large file pushed
// beside it, within twice the limit): the app's next change is RepositoryTooLarge, but deleting
// the app still removes its folder, with no annotation: removing folders is how the repository
// gets smaller, so deletions and namespace offboarding are never held by its size.
func TestDeletionGoesThroughARepositoryOverTheInflatedLimit(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("web", "t1"))
	f.waitReady("web")
	f.g.Expect(f.files(f.path("web"))).NotTo(BeEmpty())

	// Over the limit (suiteOptions), under twice it.
	size := int(suiteOptions.MaxGitInflatedSize) + int(suiteOptions.MaxGitInflatedSize)/2
	_, err := gitServer.PushOutsideCommit(f.repo, "main", "assets/large.bin", strings.Repeat("l", size))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.update("web", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "nginx:1.28" })
	f.waitCondition("web", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRepositoryTooLarge)

	f.deleteApp("web")
	f.waitGone("web")
	f.g.Expect(f.files(f.path("web"))).To(BeEmpty(), "the app's folder was removed")
	f.g.Expect(f.allFiles("assets")).To(HaveKey("large.bin"), "the large file stays")
}
