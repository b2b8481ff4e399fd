package app_test

import (
	"fmt"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
)

func withPath(p string) func(*kubeoperav1alpha1.KubeOperaApp) {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = p }
}

// sharedRepo returns a second host namespace of f's CloudSpace (Tenant tb) writing to f's
// repository: one repository serves one CloudSpace (RepositoryShared), in as many namespaces as
// it has.
func sharedRepo(t *testing.T, f *fixture) *fixture {
	t.Helper()
	other := newFixture(t)
	other.repo, other.cloudSpace = f.repo, f.cloudSpace
	other.addTenant("tb", time.Now())
	return other
}

// TestHostileTenantCannotJoinAnotherCloudSpacesRepository: an app of one CloudSpace names the
// repository another CloudSpace's app writes to, whose read-only Flux credential would let its
// vCluster read the other's folders. It is refused (RepositoryShared, terminal, a Warning
// Event) before anything is read or written: nothing pushed, no Flux object and no credential in
// its vCluster. The holder's deletion brings it back, and it is placed. Fails when a second
// CloudSpace's app can write into the repository, or when it waits forever once the holder left.
func TestHostileTenantCannotJoinAnotherCloudSpacesRepository(t *testing.T) {
	a := newFixture(t)
	a.addTenant("ta", time.Now())
	a.create(a.newApp("holder", "ta"))
	a.waitReady("holder")
	b := newFixture(t)
	b.repo = a.repo
	b.addTenant("tb", time.Now())
	pushes := gitServer.Pushes(a.repo)

	b.create(b.newApp("joiner", "tb"))
	got := b.waitCondition("joiner", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRepositoryShared)
	b.g.Expect(conditionMessage(got, kubeoperav1alpha1.ConditionManifestsCommitted)).To(And(
		ContainSubstring(`CloudSpace "`+a.cloudSpace+`"`), ContainSubstring(a.ns+"/holder")))
	b.waitEvent("joiner", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonRepositoryShared)
	b.g.Expect(gitServer.Pushes(a.repo)).To(Equal(pushes), "nothing pushed")
	b.g.Expect(b.vc(&kustomizev1.Kustomization{}, "flux-system", b.ns+"-joiner")).To(BeFalse(), "no Flux object")
	b.g.Expect(b.vc(&corev1.Secret{}, "flux-system", b.ns+"-joiner-git")).To(BeFalse(), "no Flux credential")

	a.deleteApp("holder")
	a.waitGone("holder")
	b.g.Expect(b.waitReady("joiner").Status.Path).To(Equal(b.path("joiner")))
}

// TestAppFolderBelongsToItsApp: an app's folder is refused to every other app: inside the
// namespace by the ownership marker (PathConflict, naming the owner), and to an app of another
// namespace by the folder binding, whatever its spec.git.path (GitPathNotAllowed: it writes only
// in apps/<its namespace>/). Nothing of the repository changes, and deleting the intruders
// leaves the owner's files. Fails when a hostile namespace's app can claim or block a folder of
// another namespace.
func TestAppFolderBelongsToItsApp(t *testing.T) {
	a := newFixture(t)
	a.addTenant("ta", time.Now())
	b := sharedRepo(t, a)
	ownerPath := a.path("shared/web")
	a.create(a.newApp("owner", "ta", withPath(ownerPath)))
	owner := a.waitReady("owner")
	repoBefore := a.allFiles("")
	marker := repoBefore[ownerPath+"/"+gitops.OwnerFile]
	a.g.Expect(marker).To(ContainSubstring("app: " + a.ns + "/owner\n"))
	a.g.Expect(marker).To(ContainSubstring("uid: " + string(owner.UID) + "\n"))

	const inOtherNamespace = "an app writes only in its own namespace's folder"
	intruders := []struct {
		f                  *fixture
		tenant             string
		name, path         string
		reason, mentioning string
	}{
		{a, "ta", "same-ns-equal", ownerPath, kubeoperav1alpha1.ReasonPathConflict, a.ns + "/owner"},
		{a, "ta", "same-ns-nested", ownerPath + "/inner", kubeoperav1alpha1.ReasonPathConflict, a.ns + "/owner"},
		{a, "ta", "same-ns-parent", a.path("shared"), kubeoperav1alpha1.ReasonPathConflict, a.ns + "/owner"},
		{b, "tb", "other-ns-equal", ownerPath, kubeoperav1alpha1.ReasonGitPathNotAllowed, inOtherNamespace},
		{b, "tb", "other-ns-nested", ownerPath + "/deeper/still", kubeoperav1alpha1.ReasonGitPathNotAllowed, inOtherNamespace},
		{b, "tb", "other-ns-parent", a.path("shared"), kubeoperav1alpha1.ReasonGitPathNotAllowed, inOtherNamespace},
		{b, "tb", "other-ns-default-folder-of-a", a.path("web"), kubeoperav1alpha1.ReasonGitPathNotAllowed, inOtherNamespace},
	}
	for _, in := range intruders {
		in.f.create(in.f.newApp(in.name, in.tenant, withPath(in.path)))
	}
	for _, in := range intruders {
		got := in.f.waitCondition(in.name, kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, in.reason)
		ready := apimeta.FindStatusCondition(got.Status.Conditions, kubeoperav1alpha1.ConditionReady)
		in.f.g.Expect(ready.Reason).To(Equal(in.reason), in.name)
		in.f.g.Expect(ready.Message).To(ContainSubstring(in.mentioning), in.name)
		in.f.waitEvent(in.name, corev1.EventTypeWarning, in.reason)
		// Refused before Flux: nothing in the vCluster applies the owner's folder for it.
		in.f.g.Expect(in.f.vc(&kustomizev1.Kustomization{}, "flux-system", in.f.ns+"-"+in.name)).To(BeFalse(), in.name)
	}
	a.g.Expect(a.allFiles("")).To(Equal(repoBefore), "an intruder changed the repository")
	a.waitReady("owner")
	// The default folder of a's namespace stays a's: an app of a named like the intruder that
	// aimed at it writes there.
	a.create(a.newApp("web", "ta"))
	a.g.Expect(a.waitReady("web").Status.Path).To(Equal(a.path("web")))
	repoBefore = a.allFiles("")

	for _, in := range intruders {
		in.f.deleteApp(in.name)
	}
	for _, in := range intruders {
		in.f.waitGone(in.name)
	}
	a.g.Expect(a.allFiles("")).To(Equal(repoBefore), "deleting an intruder touched the owner's files")
	still := a.waitReady("owner")
	a.g.Expect(still.Status.Commit).To(Equal(owner.Status.Commit))
	a.g.Expect(a.vc(&kustomizev1.Kustomization{}, "flux-system", a.ns+"-owner")).To(BeTrue())
}

func TestDefaultFoldersOfTwoHostNamespacesDiffer(t *testing.T) {
	a := newFixture(t)
	a.addTenant("ta", time.Now())
	b := sharedRepo(t, a)
	// Same name and target namespace, two host namespaces of one CloudSpace, one repository.
	a.create(a.newApp("web", "ta", func(x *kubeoperav1alpha1.KubeOperaApp) { x.Spec.TargetNamespace = "shop" }))
	b.create(b.newApp("web", "tb", func(x *kubeoperav1alpha1.KubeOperaApp) { x.Spec.TargetNamespace = "shop" }))
	fromA, fromB := a.waitReady("web"), b.waitReady("web")
	a.g.Expect(fromA.Status.Path).To(Equal(a.path("web")))
	a.g.Expect(fromB.Status.Path).To(Equal(b.path("web")))
	a.g.Expect(fromA.Status.Path).NotTo(Equal(fromB.Status.Path))
	a.g.Expect(a.allFiles(a.path("web"))[gitops.OwnerFile]).To(ContainSubstring(string(fromA.UID)))
	a.g.Expect(b.allFiles(b.path("web"))[gitops.OwnerFile]).To(ContainSubstring(string(fromB.UID)))
}

func TestOnlyPullSecretsCrossIntoTheVCluster(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	// A sibling Tenant's kubeconfig, named as registry Secret by a hostile app.
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "vc-sibling"},
		Data:       map[string][]byte{"config": []byte("apiVersion: v1\nkind: Config\n# sibling-s3cr3t\n")},
	})
	withRegistry := func(name string) func(*kubeoperav1alpha1.KubeOperaApp) {
		return func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Registry = nil
			if name != "" {
				a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: name}}
			}
		}
	}
	f.create(f.newApp("thief", "t1", withRegistry("vc-sibling")))
	a := f.waitCondition("thief", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRegistrySecretInvalid)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionReady)).To(ContainSubstring(`type "Opaque"`))
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionReady)).NotTo(ContainSubstring("sibling-s3cr3t"))
	f.waitEvent("thief", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonRegistrySecretInvalid)
	f.g.Expect(f.vc(&corev1.Secret{}, "thief", "vc-sibling")).To(BeFalse(), "a non-pull Secret reached the vCluster")
	f.g.Expect(f.head()).To(BeEmpty(), "nothing is committed for a refused app")

	// Pull Secrets are copied; the copy the app stops referencing is deleted.
	f.create(registrySecret(f.ns, "pull-a", dockerConfig), registrySecret(f.ns, "pull-b", dockerConfig))
	for _, step := range []struct{ use, gone string }{{"pull-a", ""}, {"pull-b", "pull-a"}, {"", "pull-b"}} {
		f.update("thief", withRegistry(step.use))
		f.waitReady("thief")
		if step.use != "" {
			f.g.Expect(f.vc(&corev1.Secret{}, "thief", step.use)).To(BeTrue(), step.use)
		}
		if step.gone != "" {
			f.g.Expect(f.vc(&corev1.Secret{}, "thief", step.gone)).To(BeFalse(), fmt.Sprintf("stale copy %q kept", step.gone))
		}
	}
	f.g.Expect(f.vc(&corev1.Secret{}, "thief", "vc-sibling")).To(BeFalse())
}

// TestHostileTenantCannotKeepAPushCredentialInTheVCluster: the Flux Secret of a placed app is
// copied into its vCluster; an app of the namespace then names that Secret as its push
// credentials. The pusher is refused (a declared copyable Secret is never pushed with) and the
// Flux app's pass that refuses its Secret deletes the copy from the vCluster, although nothing
// about the Flux app itself changed. Fails when the refusing pass leaves the copy, or when no
// pass of the Flux app runs.
func TestHostileTenantCannotKeepAPushCredentialInTheVCluster(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("reader", "t1"))
	f.waitReady("reader")
	copied := f.ns + "-reader-git"
	f.g.Expect(f.vc(&corev1.Secret{}, "flux-system", copied)).To(BeTrue(), "the Flux credentials are copied")
	head := f.head()

	f.create(f.newApp("pusher", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.SecretRef.Name = fluxSecret }))
	f.waitCondition("pusher", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonPushSecretExposed)
	a := f.waitCondition("reader", kubeoperav1alpha1.ConditionFluxConfigured, metav1.ConditionFalse, kubeoperav1alpha1.ReasonFluxSecretRefused)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionFluxConfigured)).To(ContainSubstring("spec.git.secretRef of app pusher"))
	f.g.Expect(f.vc(&corev1.Secret{}, "flux-system", copied)).To(BeFalse(), "the refused copy left the vCluster in the refusing pass")
	f.g.Expect(f.head()).To(Equal(head), "nothing was pushed with the copyable Secret")
}

// TestFolderBelongsToAUIDNotAName: another host cluster's app of the same namespace and name
// wrote the app's default folder of a shared repository (a marker with the same name and another
// UID). The app is refused (PathConflict, with how to adopt the folder) and the folder keeps the
// other app's files; adopting exactly that UID (kubeopera.io/adopt-folder) takes it over. Fails
// when ownership is decided by name.
func TestFolderBelongsToAUIDNotAName(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	path := f.path("twin")
	marker := "app: " + f.ns + "/twin\nuid: uid-of-the-other-cluster\nfiles:\n- \"deployment.yaml\"\n"
	_, err := gitServer.PushOutsideCommit(f.repo, "main", path+"/"+gitops.OwnerFile, marker)
	f.g.Expect(err).NotTo(HaveOccurred())
	_, err = gitServer.PushOutsideCommit(f.repo, "main", path+"/deployment.yaml", "the other cluster's\n")
	f.g.Expect(err).NotTo(HaveOccurred())
	pushes := gitServer.Pushes(f.repo)

	f.create(f.newApp("twin", "t1"))
	a := f.waitCondition("twin", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonPathConflict)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionManifestsCommitted)).To(
		ContainSubstring(kubeoperav1alpha1.AnnotationAdoptFolder + "=uid-of-the-other-cluster"))
	f.g.Expect(f.files(path)).To(HaveKeyWithValue("deployment.yaml", "the other cluster's\n"))
	f.g.Expect(gitServer.Pushes(f.repo)).To(Equal(pushes), "nothing pushed")

	f.update("twin", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Annotations = map[string]string{kubeoperav1alpha1.AnnotationAdoptFolder: "uid-of-the-other-cluster"}
	})
	a = f.waitReady("twin")
	f.g.Expect(f.allFiles(path)[gitops.OwnerFile]).To(ContainSubstring("uid: " + string(a.UID)))
	f.g.Expect(f.files(path)["deployment.yaml"]).NotTo(Equal("the other cluster's\n"))
}
