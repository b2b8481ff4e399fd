package app_test

import (
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// deployedApp creates a Ready app with a registry Secret in tenant t1 and returns its Flux name.
func deployedApp(f *fixture, name string) string {
	f.t.Helper()
	f.addTenant("t1", time.Now())
	f.create(registrySecret(f.ns, "pull", dockerConfig))
	f.create(f.newApp(name, "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "pull"}}
	}))
	f.waitReady(name)
	f.g.Expect(f.files(f.path(name))).NotTo(BeEmpty())
	return f.ns + "-" + name
}

// assertCleanedUp checks that the app left nothing behind: not in the vCluster, not in Git.
func assertCleanedUp(f *fixture, name, fluxName string) {
	f.t.Helper()
	f.g.Expect(f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName)).To(BeFalse(), "Kustomization left")
	f.g.Expect(f.vc(&sourcev1.GitRepository{}, "flux-system", fluxName)).To(BeFalse(), "GitRepository left")
	f.g.Expect(f.vc(&corev1.Secret{}, "flux-system", fluxName+"-git")).To(BeFalse(), "Git credentials left")
	f.g.Expect(f.vc(&corev1.Secret{}, name, "pull")).To(BeFalse(), "registry Secret left")
	f.g.Expect(f.files(f.path(name))).To(BeEmpty(), "folder left in Git")
	last := f.commits()[0]
	f.g.Expect(last.Message).To(HavePrefix("kubeopera: delete " + f.ns + "/" + name + " generation"))
}

func TestDeleteWithReachableVCluster(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "doomed")
	f.deleteApp("doomed")
	f.waitGone("doomed")
	assertCleanedUp(f, "doomed", fluxName)
	f.waitEvent("doomed", corev1.EventTypeNormal, "FolderRemoved")
}

func TestDeleteKeepsTheAppWhileTheKustomizationIsStuckUntilAbandoned(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "held")
	// Flux's finalizer stands in: the Kustomization stays until "Flux" prunes.
	ks := &kustomizev1.Kustomization{}
	f.g.Expect(f.vc(ks, "flux-system", fluxName)).To(BeTrue())
	ks.Finalizers = append(ks.Finalizers, "test/hold")
	f.g.Expect(vcluster.Client.Update(f.ctx, ks)).To(Succeed())
	t.Cleanup(func() {
		_ = vcluster.Client.Get(f.ctx, client.ObjectKeyFromObject(ks), ks)
		ks.Finalizers = nil
		_ = vcluster.Client.Update(f.ctx, ks)
	})

	f.deleteApp("held")
	f.waitCondition("held", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonDeleting)
	// While the Kustomization exists, the GitRepository (its source) and the files stay.
	f.g.Expect(f.vc(&sourcev1.GitRepository{}, "flux-system", fluxName)).To(BeTrue())
	f.g.Expect(f.files(f.path("held"))).NotTo(BeEmpty())
	// After KustomizationDeleteTimeout (3s in the suite) the app says so, and is kept: its
	// workload may still run.
	a := f.waitCondition("held", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonKustomizationStuck)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionReady)).To(ContainSubstring(kubeoperav1alpha1.AnnotationAbandonKustomization))
	f.waitEvent("held", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonKustomizationStuck)
	// Two more passes (manual retries) still keep it.
	f.pokeAndWait("held")
	f.pokeAndWait("held")
	f.g.Expect(f.get("held").Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))
	f.g.Expect(f.files(f.path("held"))).NotTo(BeEmpty())

	// The administrator's explicit escape: the cleanup goes on without the Kustomization.
	f.update("held", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Annotations = map[string]string{kubeoperav1alpha1.AnnotationAbandonKustomization: "true"}
	})
	f.waitGone("held")
	f.waitEvent("held", corev1.EventTypeWarning, "KustomizationAbandoned")
	f.g.Expect(f.vc(&sourcev1.GitRepository{}, "flux-system", fluxName)).To(BeFalse())
	f.g.Expect(f.files(f.path("held"))).To(BeEmpty())
}

func TestDeleteAfterAPassDiedBeforeItsStatusPatch(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	fluxName := f.ns + "-crashy"
	// The API server refuses every status patch of the app once its Flux objects exist: the
	// state a crash between the Flux apply and the deferred status patch leaves behind.
	refuse := func(obj client.Object) error {
		if obj.GetNamespace() != f.ns || obj.GetName() != "crashy" {
			return nil
		}
		if f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName) {
			return apierrors.NewServiceUnavailable("test: the status patch after the side effects never arrives")
		}
		return nil
	}
	statusPatchHook.Store(&refuse)
	f.create(f.newApp("crashy", "t1"))
	f.g.Eventually(func() bool {
		return f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName) && len(f.files(f.path("crashy"))) > 0
	}).Should(BeTrue())
	a := f.get("crashy")
	f.g.Expect(a.Status.Commit).To(BeEmpty(), "the pass's own status never arrived")
	f.g.Expect(findCondition(a, kubeoperav1alpha1.ConditionReady)).To(BeNil())

	f.deleteApp("crashy")
	f.waitGone("crashy")
	f.g.Expect(f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName)).To(BeFalse(), "Kustomization left running")
	f.g.Expect(f.vc(&sourcev1.GitRepository{}, "flux-system", fluxName)).To(BeFalse())
	f.g.Expect(f.vc(&corev1.Secret{}, "flux-system", fluxName+"-git")).To(BeFalse())
	f.g.Expect(f.allFiles(f.path("crashy"))).To(BeEmpty(), "folder left in Git")
}

func TestDeleteWithRepositoryGone(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "orphan")
	f.g.Expect(gitServer.RemoveRepository(f.repo)).To(Succeed())
	f.deleteApp("orphan")
	f.waitGone("orphan")
	f.waitEvent("orphan", corev1.EventTypeWarning, "GitRepositoryGone")
	f.g.Expect(f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName)).To(BeFalse())
	f.g.Expect(f.vc(&corev1.Secret{}, "orphan", "pull")).To(BeFalse())
}

func TestDeleteRetriesGitFailuresUntilTheGitStepIsSkipped(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "stubborn")
	creds := &corev1.Secret{}
	f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: gitSecret}, creds)).To(Succeed())
	creds.Data["password"] = []byte("revoked-p4ss")
	f.g.Expect(host.Client.Update(f.ctx, creds)).To(Succeed())

	f.deleteApp("stubborn")
	a := f.waitCondition("stubborn", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonDeleteFailed)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionReady)).To(ContainSubstring("remove folder"))
	// A Git failure other than a missing repository is retried (two more passes, the backoff's
	// own), and the app is kept.
	f.waitMorePasses("stubborn", 2)
	f.g.Expect(f.get("stubborn").Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))
	f.g.Expect(f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName)).To(BeFalse(), "the vCluster is cleaned first")

	f.update("stubborn", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Annotations = map[string]string{kubeoperav1alpha1.AnnotationSkipGitCleanup: "true"}
	})
	f.waitGone("stubborn")
	f.waitEvent("stubborn", corev1.EventTypeWarning, "GitCleanupSkipped")
	f.g.Expect(f.files(f.path("stubborn"))).NotTo(BeEmpty(), "the folder stays, as the annotation says")
}

func TestDeleteWithUnreachableThenReachableVCluster(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "patient")

	// The vCluster becomes unreachable: its kubeconfig now points at a closed port.
	kubeconfig := &corev1.Secret{}
	f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "vc-t1"}, kubeconfig)).To(Succeed())
	server := serverOf(f, vclusterKubeconfig)
	kubeconfig.Data["config"] = []byte(strings.Replace(string(vclusterKubeconfig), server, "https://"+closedAddress(f), 1))
	f.g.Expect(host.Client.Update(f.ctx, kubeconfig)).To(Succeed())
	// Deleted only once a pass found the vCluster unreachable: the operator's caches then hold
	// the new kubeconfig, so the deletion cannot use the old client.
	f.waitCondition("patient", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonVClusterUnreachable)

	f.deleteApp("patient")
	a := f.waitCondition("patient", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonDeleteFailed)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionReady)).To(ContainSubstring("delete Kustomization"))
	f.waitEvent("patient", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonDeleteFailed)
	// Nothing is given up while the vCluster exists but cannot be reached: two more passes (the
	// backoff's retries) keep the app.
	f.waitMorePasses("patient", 2)
	f.g.Expect(f.get("patient").Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))
	f.g.Expect(f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName)).To(BeTrue())
	f.g.Expect(f.files(f.path("patient"))).NotTo(BeEmpty())

	// Reachable again: the cleanup completes.
	kubeconfig.Data["config"] = vclusterKubeconfig
	f.g.Expect(host.Client.Update(f.ctx, kubeconfig)).To(Succeed())
	f.waitGone("patient")
	assertCleanedUp(f, "patient", fluxName)
}

func TestDeleteWithTenantGone(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "stranded")
	// The vCluster is deleted: Tenant and kubeconfig Secret go.
	f.g.Expect(host.Client.Delete(f.ctx, &tenantv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "t1"}})).To(Succeed())
	f.g.Expect(host.Client.Delete(f.ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "vc-t1"}})).To(Succeed())

	f.deleteApp("stranded")
	f.waitGone("stranded")
	f.waitEvent("stranded", corev1.EventTypeWarning, "TenantGone")
	// The Git folder is removed all the same; the vCluster was not touched (it is "gone").
	f.g.Expect(f.files(f.path("stranded"))).To(BeEmpty())
	f.g.Expect(f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName)).To(BeTrue())
	f.g.Expect(vcluster.Client.Delete(f.ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: fluxName}})).To(Succeed())
}

func TestDeleteBeforeAnythingWasPlaced(t *testing.T) {
	f := newFixture(t)
	f.create(f.newApp("never-placed", "no-such-tenant"))
	f.waitCondition("never-placed", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonTenantNotFound)
	f.g.Expect(f.get("never-placed").Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))
	f.deleteApp("never-placed")
	f.waitGone("never-placed")
	f.g.Expect(f.head()).To(BeEmpty())
}

func TestRegistrySecretSharedByAnotherAppIsKept(t *testing.T) {
	f := newFixture(t)
	deployedApp(f, "first")
	f.create(f.newApp("second", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = "first"
		a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "pull"}}
	}))
	f.waitReady("second")
	f.deleteApp("first")
	f.waitGone("first")
	f.g.Expect(f.vc(&corev1.Secret{}, "first", "pull")).To(BeTrue(), "the Secret the other app uses was deleted")
	f.deleteApp("second")
	f.waitGone("second")
	f.g.Expect(f.vc(&corev1.Secret{}, "first", "pull")).To(BeFalse())
}

// serverOf returns the server URL of a kubeconfig.
func serverOf(f *fixture, kubeconfig []byte) string {
	f.t.Helper()
	for _, line := range strings.Split(string(kubeconfig), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "server: "); ok {
			return v
		}
	}
	f.t.Fatal("no server in kubeconfig")
	return ""
}

// closedAddress returns a loopback address nothing listens on.
func closedAddress(f *fixture) string {
	f.t.Helper()
	l, err := (&net.ListenConfig{}).Listen(f.ctx, "tcp", "127.0.0.1:0")
	f.g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	f.g.Expect(l.Close()).To(Succeed())
	return addr
}

// The abandon annotation also ends a deletion whose Tenant exists but whose vCluster is gone for
// good (its kubeconfig points at a server that never answers): the vCluster is left with a
// Warning Event, the Git folder is removed. Before, such an app could never be deleted.
func TestDeleteWithUnreachableVClusterIsAbandonedOnRequest(t *testing.T) {
	f := newFixture(t)
	fluxName := deployedApp(f, "castaway")
	kubeconfig := &corev1.Secret{}
	f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "vc-t1"}, kubeconfig)).To(Succeed())
	server := serverOf(f, vclusterKubeconfig)
	kubeconfig.Data["config"] = []byte(strings.Replace(string(vclusterKubeconfig), server, "https://"+closedAddress(f), 1))
	f.g.Expect(host.Client.Update(f.ctx, kubeconfig)).To(Succeed())
	// The changed kubeconfig brings the app back; once that pass finds the vCluster unreachable,
	// the operator's caches hold the new kubeconfig, so the deletion cannot use the old client.
	f.waitCondition("castaway", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonVClusterUnreachable)
	t.Cleanup(func() {
		// What the abandoned vCluster still holds.
		_ = vcluster.Client.Delete(f.ctx, &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: fluxName}})
		_ = vcluster.Client.Delete(f.ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: fluxName}})
	})

	f.deleteApp("castaway")
	a := f.waitCondition("castaway", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonDeleteFailed)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionReady)).To(ContainSubstring(kubeoperav1alpha1.AnnotationAbandonKustomization + "=true"))
	f.g.Expect(a.Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))

	f.update("castaway", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Annotations[kubeoperav1alpha1.AnnotationAbandonKustomization] = "true"
	})
	f.waitGone("castaway")
	e := f.waitEvent("castaway", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonVClusterCleanupAbandoned)
	f.g.Expect(e.Note).To(ContainSubstring("delete Kustomization"))
	f.g.Expect(f.files(f.path("castaway"))).To(BeEmpty(), "folder left in Git")
	f.g.Expect(f.vc(&kustomizev1.Kustomization{}, "flux-system", fluxName)).To(BeTrue(), "the unreachable vCluster was cleaned after all")
}

// A deletion pass does not wait for the push that removes the app's folder: while the push is
// held, the pass ends (the finalizer stays) and frees its worker; the push's callback brings the
// app back, and that pass removes the finalizer.
func TestDeletionPassDoesNotWaitForItsPush(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("gone", "t1"))
	f.waitReady("gone")

	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	var held atomic.Int32
	hold := func() {
		held.Add(1)
		<-release
	}
	beforePush.Store(&hold)
	t.Cleanup(func() { beforePush.Store(nil); open() })

	before := passes.of(f.ns, "gone")
	f.deleteApp("gone")
	f.g.Eventually(held.Load).Should(BeNumerically(">=", 1), "the folder's removal is pushed")
	f.g.Eventually(func() int { return passes.of(f.ns, "gone") }).Should(BeNumerically(">", before),
		"the deletion pass waited for the held push")
	f.g.Expect(f.get("gone").Finalizers).To(ContainElement(kubeoperav1alpha1.Finalizer))

	beforePush.Store(nil)
	open()
	f.waitGone("gone")
	f.g.Expect(f.files(f.path("gone"))).To(BeEmpty())
}
