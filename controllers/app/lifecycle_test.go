package app_test

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// placementOf decodes the app's placement annotation.
func placementOf(f *fixture, name string) map[string]string {
	f.t.Helper()
	raw, ok := f.get(name).Annotations[kubeoperav1alpha1.AnnotationPlacement]
	f.g.Expect(ok).To(BeTrue(), "no placement annotation")
	p := map[string]string{}
	f.g.Expect(json.Unmarshal([]byte(raw), &p)).To(Succeed())
	return p
}

// wipeStatus replaces the app's status with an empty one (status subresource), as a restore
// without the status or a careless edit leaves it.
func wipeStatus(f *fixture, name string) {
	f.t.Helper()
	f.g.Eventually(func() error {
		a := f.get(name)
		a.Status = kubeoperav1alpha1.KubeOperaAppStatus{}
		return host.Client.Status().Update(f.ctx, a)
	}).Should(Succeed())
	f.g.Expect(f.get(name).Status.Path).To(BeEmpty())
}

// The placement is recorded on the object, not only in status: an app whose status was wiped
// gets it back on its next pass, and its deletion still finds what to clean (the workload and
// the folder), without any pass in between.
func TestWipedStatusIsRestoredFromThePlacementAnnotation(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "amnesiac")
	f.g.Expect(placementOf(f, "amnesiac")).To(Equal(map[string]string{
		"tenant": "t1", "url": f.gitURL(), "branch": "main", "path": f.path("amnesiac"), "secretName": gitSecret,
	}))

	wipeStatus(f, "amnesiac")
	f.pokeAndWait("amnesiac")
	a := f.waitReady("amnesiac")
	f.g.Expect(a.Status.Path).To(Equal(f.path("amnesiac")))
	f.g.Expect(a.Status.Repository).To(Equal(f.gitURL()))
	f.g.Expect(a.Status.Tenant).NotTo(BeNil())
	f.g.Expect(a.Status.Tenant.Name).To(Equal("t1"))

	wipeStatus(f, "amnesiac")
	f.deleteApp("amnesiac")
	f.waitGone("amnesiac")
	assertCleanedUp(f, "amnesiac", fluxName)
}

// fluxAtPushes records, at every push of the Git writer, where the app's Kustomization and
// GitRepository point: a move must re-point Flux before it removes the old folder.
func fluxAtPushes(f *fixture, fluxName string) func() []string {
	var mu sync.Mutex
	var seen []string
	hook := func() {
		ks, repo := &kustomizev1.Kustomization{}, &sourcev1.GitRepository{}
		if !f.vc(ks, "flux-system", fluxName) || !f.vc(repo, "flux-system", fluxName) {
			return
		}
		mu.Lock()
		seen = append(seen, repo.Spec.URL+" "+ks.Spec.Path)
		mu.Unlock()
	}
	beforePush.Store(&hook)
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// A move from ssh:// to http:// (new URL, new push Secret, new path) removes the old folder
// through the old URL with the SSH key recorded for it, after Flux reads the new folder. Before,
// the old folder was removed with the new Secret (a password for an ssh:// URL): refused, and
// the move never finished.
func TestMoveRemovesTheOldFolderWithTheOldCredentials(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	access, err := gitServer.StartSSH()
	f.g.Expect(err).NotTo(HaveOccurred())
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "ssh-creds"}, Data: access.SecretData()})
	f.create(f.newApp("migrant", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.URL = access.BaseURL + "/" + f.repo + ".git"
		a.Spec.Git.SecretRef.Name = "ssh-creds"
		a.Spec.Git.FluxSecretRef = nil
	}))
	f.waitReady("migrant")
	oldPath, newPath := f.path("migrant"), f.path("migrated/migrant")
	f.g.Expect(f.files(oldPath)).To(HaveKey("deployment.yaml"))
	f.g.Expect(placementOf(f, "migrant")["secretName"]).To(Equal("ssh-creds"))

	seen := fluxAtPushes(f, f.ns+"-migrant")
	f.update("migrant", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.URL = f.gitURL()
		a.Spec.Git.SecretRef.Name = gitSecret
		a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: fluxSecret}
		a.Spec.Git.Path = newPath
	})
	a := f.waitReady("migrant")
	f.g.Expect(a.Status.Repository).To(Equal(f.gitURL()))
	f.g.Expect(a.Status.Path).To(Equal(newPath))
	f.g.Expect(f.files(oldPath)).To(BeEmpty(), "the old folder stayed")
	f.g.Expect(f.files(newPath)).To(HaveKey("deployment.yaml"))
	f.waitEvent("migrant", corev1.EventTypeNormal, "FolderRemoved")
	f.g.Expect(placementOf(f, "migrant")).To(Equal(map[string]string{
		"tenant": "t1", "url": f.gitURL(), "branch": "main", "path": newPath, "secretName": gitSecret,
	}))
	// Two pushes: the new folder (Flux still at the old one), then the removal of the old one,
	// with Flux already at the new folder.
	pushes := seen()
	f.g.Expect(pushes).To(HaveLen(2))
	f.g.Expect(pushes[0]).To(Equal(access.BaseURL + "/" + f.repo + ".git ./" + oldPath))
	f.g.Expect(pushes[1]).To(Equal(f.gitURL() + " ./" + newPath))
}

// A move whose old push Secret is refused converges: Flux reads the new folder, the placement is
// the new one, and the old folder stays with a Warning Event (the new Secret is never sent to
// the old placement). Before, the old folder was removed with the new Secret.
func TestMoveWithTheOldCredentialsRefusedLeavesTheOldFolder(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "old-push"}, Data: gitServer.SecretData()})
	f.create(f.newApp("leaver", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.SecretRef.Name = "old-push" }))
	f.waitReady("leaver")
	oldPath, newPath := f.path("leaver"), f.path("elsewhere/leaver")

	// The old token is revoked: the Git server refuses it from now on.
	old := &corev1.Secret{}
	f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "old-push"}, old)).To(Succeed())
	old.Data["password"] = []byte("revoked-p4ss")
	f.g.Expect(host.Client.Update(f.ctx, old)).To(Succeed())
	f.update("leaver", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.SecretRef.Name = gitSecret
		a.Spec.Git.Path = newPath
	})
	a := f.waitReady("leaver")
	f.g.Expect(a.Status.Path).To(Equal(newPath))
	e := f.waitEvent("leaver", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonOldFolderLeft)
	f.g.Expect(e.Note).To(ContainSubstring(oldPath))
	f.g.Expect(e.Note).To(ContainSubstring("old-push"))
	// The Warning Event is the lasting record: the move's condition message names the old folder
	// only until the next pass (now that a pass queued meanwhile reads the move's own status,
	// internal/cachewait, it replaces the message with the current commit's).
	f.g.Expect(f.files(oldPath)).To(HaveKey("deployment.yaml"), "the old folder was removed with the new credentials")
	f.g.Expect(f.files(newPath)).To(HaveKey("deployment.yaml"))
	ks := &kustomizev1.Kustomization{}
	f.g.Expect(f.vc(ks, "flux-system", f.ns+"-leaver")).To(BeTrue())
	f.g.Expect(ks.Spec.Path).To(Equal("./" + newPath))
	f.g.Expect(placementOf(f, "leaver")["path"]).To(Equal(newPath))
}

// kubeopera.io/skip-git-cleanup applies to a move as to a deletion: the old folder stays.
func TestMoveHonoursSkipGitCleanup(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("keeper", "t1"))
	f.waitReady("keeper")
	oldPath, newPath := f.path("keeper"), f.path("kept/keeper")
	f.update("keeper", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Annotations[kubeoperav1alpha1.AnnotationSkipGitCleanup] = "true"
		a.Spec.Git.Path = newPath
	})
	a := f.waitReady("keeper")
	f.g.Expect(a.Status.Path).To(Equal(newPath))
	f.waitEvent("keeper", corev1.EventTypeWarning, "GitCleanupSkipped")
	f.g.Expect(f.files(oldPath)).To(HaveKey("deployment.yaml"))
	f.g.Expect(f.files(newPath)).To(HaveKey("deployment.yaml"))
}

// Deleting the app's host namespace deletes its apps and its push Secret in one sweep. The push
// Secret is held (kubeopera.io/git-credentials-in-use) until the app removed its folder with it,
// then released, and goes. envtest runs no namespace controller, so the test sends the two
// deletes the namespace controller would send. Before, the Secret went at once and the folder
// stayed in Git (GitCleanupSkipped).
func TestDeletingTheNamespaceSweepStillRemovesTheFolder(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "swept")
	creds := &corev1.Secret{}
	f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: gitSecret}, creds)).To(Succeed())
	f.g.Expect(creds.Finalizers).To(ContainElement(kubeoperav1alpha1.SecretFinalizer))

	f.g.Expect(host.Client.Delete(f.ctx, creds)).To(Succeed())
	f.deleteApp("swept")
	f.waitGone("swept")
	assertCleanedUp(f, "swept", fluxName)
	f.g.Eventually(func() bool {
		return apierrors.IsNotFound(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: gitSecret}, &corev1.Secret{}))
	}).Should(BeTrue(), "the push Secret was never released")
	for _, e := range f.events("swept") {
		f.g.Expect(e.Reason).NotTo(Equal("GitCleanupSkipped"), e.Note)
	}
}

// A push Secret an app stops naming is released at once; one that another app still names is
// kept until that app is gone too.
func TestPushSecretIsReleasedWhenNoAppNamesIt(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shared-push"}, Data: gitServer.SecretData()})
	for _, name := range []string{"one", "two"} {
		f.create(f.newApp(name, "t1", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.SecretRef.Name = "shared-push" }))
		f.waitReady(name)
	}
	held := func() bool {
		s := &corev1.Secret{}
		f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "shared-push"}, s)).To(Succeed())
		return slices.Contains(s.Finalizers, kubeoperav1alpha1.SecretFinalizer)
	}
	f.g.Expect(held()).To(BeTrue())
	f.update("one", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.SecretRef.Name = gitSecret })
	f.waitReady("one")
	f.g.Expect(placementOf(f, "one")["secretName"]).To(Equal(gitSecret))
	f.pokeAndWait("two")
	f.g.Expect(held()).To(BeTrue(), "released while app two pushes with it")
	f.deleteApp("two")
	f.waitGone("two")
	f.g.Eventually(held).Should(BeFalse(), "kept after the last app naming it")
}
