package app_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

const dockerConfig = `{"auths":{"registry.example.com":{"auth":"cmVnaXN0cnktdXNlcjpyZWdpc3RyeS1zM2NyM3Q="}}}`

func registrySecret(ns, name, content string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(content)},
	}
}

func TestAppIsCommittedAndFluxConfigured(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(registrySecret(f.ns, "pull", dockerConfig))
	f.create(f.newApp("shop", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.TargetNamespace = "shop-ns"
		a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "pull"}}
		a.Spec.Ingress = &kubeoperav1alpha1.IngressSpec{Host: "shop.example.com", TLS: true, ClusterIssuer: "letsencrypt"}
		a.Spec.Flux.Interval = "30s"
	}))
	a := f.waitReady("shop")
	for _, c := range []string{kubeoperav1alpha1.ConditionTenantResolved, kubeoperav1alpha1.ConditionManifestsCommitted, kubeoperav1alpha1.ConditionFluxConfigured} {
		f.waitCondition("shop", c, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
	}
	f.waitCondition("shop", kubeoperav1alpha1.ConditionSynced, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRevisionNotApplied)

	// Status: the pushed commit, the folder, the URL.
	f.g.Expect(a.Status.Commit).To(Equal(f.head()))
	f.g.Expect(a.Status.ShortCommit).To(Equal(a.Status.Commit[:8]))
	f.g.Expect(a.Status.Path).To(Equal(f.path("shop")))
	f.g.Expect(a.Status.URL).To(Equal("https://shop.example.com"))

	// Git: the four files, read back from the server; one commit naming app and generation.
	files := f.files(f.path("shop"))
	f.g.Expect(mapKeys(files)).To(ConsistOf("deployment.yaml", "service.yaml", "ingress.yaml", "kustomization.yaml"))
	for name, content := range files {
		if name == "kustomization.yaml" {
			continue
		}
		f.g.Expect(content).To(ContainSubstring("namespace: shop-ns"), name)
		f.g.Expect(content).NotTo(ContainSubstring("kind: Namespace"), name)
	}
	f.g.Expect(files["ingress.yaml"]).To(ContainSubstring("cert-manager.io/cluster-issuer: letsencrypt"))
	f.g.Expect(files["deployment.yaml"]).To(ContainSubstring("- name: pull"))
	assertNoSecretsIn(f, strings.Join(mapValues(files), "\n"))
	commits := f.commits()
	f.g.Expect(commits).To(HaveLen(1))
	f.g.Expect(commits[0].Message).To(HavePrefix(fmt.Sprintf("kubeopera: update %s/shop generation %d", f.ns, a.Generation)))
	f.g.Expect(commits[0].Author.Name).To(Equal("kubeopera-app-controller"))
	f.waitEvent("shop", corev1.EventTypeNormal, "Committed")

	// vCluster: namespace (created directly), registry Secret copied by name and contents.
	f.g.Expect(f.vc(&corev1.Namespace{}, "", "shop-ns")).To(BeTrue())
	pull := &corev1.Secret{}
	f.g.Expect(f.vc(pull, "shop-ns", "pull")).To(BeTrue())
	f.g.Expect(pull.Type).To(Equal(corev1.SecretTypeDockerConfigJson))
	f.g.Expect(string(pull.Data[corev1.DockerConfigJsonKey])).To(Equal(dockerConfig))

	// Flux objects, typed: GitRepository with the copied read-only credentials (never the push
	// credentials), Kustomization with prune.
	name := f.ns + "-shop"
	repo := &sourcev1.GitRepository{}
	f.g.Expect(f.vc(repo, "flux-system", name)).To(BeTrue())
	f.g.Expect(repo.Spec.URL).To(Equal(f.gitURL()))
	f.g.Expect(repo.Spec.Reference.Branch).To(Equal("main"))
	f.g.Expect(repo.Spec.Interval.Duration).To(Equal(30 * time.Second))
	f.g.Expect(repo.Spec.SecretRef.Name).To(Equal(name + "-git"))
	f.g.Expect(repo.Annotations).To(HaveKeyWithValue("reconcile.fluxcd.io/requestedAt", a.Status.Commit))
	creds := &corev1.Secret{}
	f.g.Expect(f.vc(creds, "flux-system", name+"-git")).To(BeTrue())
	f.g.Expect(creds.Data).To(Equal(gitServer.ReadOnlySecretData()))
	ks := &kustomizev1.Kustomization{}
	f.g.Expect(f.vc(ks, "flux-system", name)).To(BeTrue())
	f.g.Expect(ks.Spec.Prune).To(BeTrue())
	f.g.Expect(ks.Spec.Path).To(Equal("./" + f.path("shop")))
	f.g.Expect(ks.Spec.TargetNamespace).To(Equal("shop-ns"))
	f.g.Expect(ks.Spec.SourceRef).To(Equal(kustomizev1.CrossNamespaceSourceReference{
		APIVersion: sourcev1.GroupVersion.String(), Kind: "GitRepository", Name: name, Namespace: "flux-system",
	}))

	// Secrets never reach conditions or events either.
	for _, c := range f.get("shop").Status.Conditions {
		assertNoSecretsIn(f, c.Message)
	}
	for _, e := range f.events("shop") {
		assertNoSecretsIn(f, e.Note)
	}
}

func TestRegistrySecretMissingThenCreatedThenUpdated(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("app", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "late-pull"}}
	}))
	f.waitCondition("app", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonRegistrySecretNotFound)
	f.waitEvent("app", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonRegistrySecretNotFound)
	f.g.Expect(f.head()).To(BeEmpty(), "nothing is committed before the pull Secret exists")

	hostSecret := registrySecret(f.ns, "late-pull", dockerConfig)
	f.create(hostSecret)
	f.waitReady("app")
	copied := &corev1.Secret{}
	f.g.Expect(f.vc(copied, "app", "late-pull")).To(BeTrue())
	f.g.Expect(string(copied.Data[corev1.DockerConfigJsonKey])).To(Equal(dockerConfig))

	// A rotated registry password reaches the vCluster through the Secret watch alone.
	rotated := strings.Replace(dockerConfig, "cmVn", "bmV3", 1)
	hostSecret.Data[corev1.DockerConfigJsonKey] = []byte(rotated)
	f.g.Expect(host.Client.Update(f.ctx, hostSecret)).To(Succeed())
	f.g.Eventually(func() string {
		f.g.Expect(f.vc(copied, "app", "late-pull")).To(BeTrue())
		return string(copied.Data[corev1.DockerConfigJsonKey])
	}).Should(Equal(rotated))
}

func TestUnchangedManifestsMakeNoCommit(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("steady", "t1"))
	first := f.waitReady("steady")
	f.g.Expect(f.commits()).To(HaveLen(1))

	// Reconciles that render the same files (a Flux-only change, a manual retry) push nothing.
	f.update("steady", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Flux.Interval = "2m" })
	again := f.waitReady("steady")
	f.g.Expect(again.Generation).To(BeNumerically(">", first.Generation))
	ks := &kustomizev1.Kustomization{}
	f.g.Expect(f.vc(ks, "flux-system", f.ns+"-steady")).To(BeTrue())
	f.g.Expect(ks.Spec.Interval.Duration).To(Equal(2 * time.Minute))
	// The manual retry's pass has finished; its push, were there one, would follow within the
	// batching window, which the second covers.
	f.pokeAndWait("steady")
	f.g.Consistently(func() int { return len(f.commits()) }, time.Second, 100*time.Millisecond).Should(Equal(1))
	f.g.Expect(f.get("steady").Status.Commit).To(Equal(first.Status.Commit))
	// (That it writes no Flux object either is counted in TestSyncedAppInSteadyStateWritesNothing.)

	// A real change is one new commit, with the new generation in its message.
	f.update("steady", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = "ghcr.io/example/steady:2.0.0" })
	changed := f.waitReady("steady")
	f.g.Expect(changed.Status.Commit).NotTo(Equal(first.Status.Commit))
	commits := f.commits()
	f.g.Expect(commits).To(HaveLen(2))
	f.g.Expect(commits[0].Hash.String()).To(Equal(changed.Status.Commit))
	f.g.Expect(commits[0].Message).To(ContainSubstring(fmt.Sprintf("generation %d", changed.Generation)))
	f.g.Expect(f.files(f.path("steady"))["deployment.yaml"]).To(ContainSubstring("image: ghcr.io/example/steady:2.0.0"))
}

func TestPathChangeMovesTheFolder(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("mover", "t1"))
	f.waitReady("mover")
	f.update("mover", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = f.path("tenants/mover") })
	a := f.waitReady("mover")
	f.g.Expect(a.Status.Path).To(Equal(f.path("tenants/mover")))
	f.g.Expect(f.files(f.path("mover"))).To(BeEmpty())
	f.g.Expect(f.files(f.path("tenants/mover"))).To(HaveKey("deployment.yaml"))
	// The new folder's commit, then the old folder's removal (once Flux reads the new one):
	// status.commit is the commit that last changed the app's folder.
	commits := f.commits()
	f.g.Expect(commits[0].Hash.String()).To(Equal(f.head()))
	f.g.Expect(commits[0].Message).To(HavePrefix("kubeopera: move " + f.ns + "/mover"))
	f.g.Expect(a.Status.Commit).To(Equal(commits[1].Hash.String()))
}

func TestThirtyAppsInOneRepositoryAreGrouped(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	const n = 30
	// A deterministic gate instead of timing: the first push waits until every app's change
	// is queued behind it, so the rest go out together in the next commit.
	var queued atomic.Int32
	allQueued := make(chan struct{})
	countQueued := func() {
		if queued.Add(1) == n {
			close(allQueued)
		}
	}
	var pushes atomic.Int32
	holdFirst := func() {
		if pushes.Add(1) == 1 {
			select {
			case <-allQueued:
			case <-time.After(timeout):
				t.Errorf("only %d of %d changes were queued behind the first push", queued.Load(), n)
			}
		}
	}
	onQueued.Store(&countQueued)
	beforePush.Store(&holdFirst)
	for i := range n {
		f.create(f.newApp(fmt.Sprintf("app-%02d", i), "t1"))
	}
	for i := range n {
		f.waitReady(fmt.Sprintf("app-%02d", i))
	}
	for i := range n {
		name := fmt.Sprintf("app-%02d", i)
		f.g.Expect(mapKeys(f.files(f.path(name)))).To(ConsistOf("deployment.yaml", "service.yaml", "kustomization.yaml"), name)
	}
	commits := f.commits()
	t.Logf("%d apps, %d commits, %d pushes", n, len(commits), pushes.Load())
	f.g.Expect(len(commits)).To(BeNumerically("<=", 2), "changes of concurrently reconciled apps were not grouped")
}

func TestURLAndPathChangeRemovesTheOldFolderFromTheOldRepository(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("traveller", "t1"))
	f.waitReady("traveller")
	oldRepo, oldPath := f.repo, f.path("traveller")
	newRepo := f.repo + "-new"
	// The new repository holds a folder at the old path that is not the app's: it must stay.
	_, err := gitServer.PushOutsideCommit(newRepo, "main", oldPath+"/keep.yaml", "not the app's\n")
	f.g.Expect(err).NotTo(HaveOccurred())

	f.update("traveller", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.URL = gitServer.URL(newRepo)
		a.Spec.Git.Path = f.path("moved/traveller")
	})
	a := f.waitReady("traveller")
	f.g.Expect(a.Status.Repository).To(Equal(gitServer.URL(newRepo)))
	f.g.Expect(a.Status.Path).To(Equal(f.path("moved/traveller")))
	old, err := gitServer.Files(oldRepo, "main", oldPath)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(old).To(BeEmpty(), "the old folder stayed in the old repository")
	kept, err := gitServer.Files(newRepo, "main", oldPath)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(kept).To(Equal(map[string]string{"keep.yaml": "not the app's\n"}), "the old path was removed from the new repository")
	moved, err := gitServer.Files(newRepo, "main", f.path("moved/traveller"))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(moved).To(HaveKey("deployment.yaml"))
	repo := &sourcev1.GitRepository{}
	f.g.Expect(f.vc(repo, "flux-system", f.ns+"-traveller")).To(BeTrue())
	f.g.Expect(repo.Spec.URL).To(Equal(gitServer.URL(newRepo)))
}

func TestOutsideCommitDuringPushIsKept(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	// Start the branch, so the outside writer and the app race on an existing branch.
	_, err := gitServer.PushOutsideCommit(f.repo, "main", "README.md", "tenant apps\n")
	f.g.Expect(err).NotTo(HaveOccurred())

	var pushes, outside atomic.Int32
	hook := func() {
		pushes.Add(1)
		if outside.CompareAndSwap(0, 1) {
			// Another writer pushes to the same branch right before our push: our push is
			// rejected as non-fast-forward and must be fetched, re-applied and retried.
			if _, err := gitServer.PushOutsideCommit(f.repo, "main", "infra/outside.yaml", "outside: true\n"); err != nil {
				t.Errorf("outside push: %v", err)
			}
		}
	}
	beforePush.Store(&hook)
	f.create(f.newApp("racer", "t1"))
	a := f.waitReady("racer")
	beforePush.Store(nil)

	f.g.Expect(pushes.Load()).To(BeNumerically(">=", 2), "the rejected push was not retried")
	f.g.Expect(f.files("infra")).To(HaveKeyWithValue("outside.yaml", "outside: true\n"))
	f.g.Expect(f.files("")).To(HaveKey("README.md"))
	f.g.Expect(f.files(f.path("racer"))).To(HaveKey("deployment.yaml"))
	f.g.Expect(a.Status.Commit).To(Equal(f.head()))
	f.g.Expect(f.commits()).To(HaveLen(3))
}

func TestGitAuthFailure(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "wrong-creds"},
		Data:       map[string][]byte{"username": []byte("git"), "password": []byte("wrong-p4ssw0rd")},
	})
	f.create(f.newApp("locked-out", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.SecretRef.Name = "wrong-creds"
	}))
	a := f.waitCondition("locked-out", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitAuthFailed)
	f.waitCondition("locked-out", kubeoperav1alpha1.ConditionReady, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitAuthFailed)
	e := f.waitEvent("locked-out", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonGitAuthFailed)
	for _, text := range []string{conditionMessage(a, kubeoperav1alpha1.ConditionManifestsCommitted), e.Note} {
		f.g.Expect(text).NotTo(ContainSubstring("wrong-p4ssw0rd"))
	}
	f.g.Expect(f.head()).To(BeEmpty())

	// A missing Secret has its own reason.
	f.update("locked-out", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.SecretRef.Name = "no-such-secret" })
	f.waitCondition("locked-out", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitSecretNotFound)

	// Right credentials: committed.
	f.update("locked-out", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.SecretRef.Name = gitSecret })
	f.waitReady("locked-out")
}

// assertNoSecretsIn fails when text holds a credential of the suite.
func assertNoSecretsIn(f *fixture, text string) {
	f.t.Helper()
	for _, secret := range []string{gitServer.Password, "cmVnaXN0cnktdXNlcjpyZWdpc3RyeS1zM2NyM3Q=", "registry-s3cr3t"} {
		f.g.Expect(text).NotTo(ContainSubstring(secret))
	}
	var anything map[string]any
	_ = yaml.Unmarshal([]byte(text), &anything)
	f.g.Expect(anything["kind"]).NotTo(Equal("Secret"))
}

func mapKeys[V any](m map[string]V) []string {
	return slices.Collect(maps.Keys(m))
}

func mapValues(m map[string]string) []string {
	values := make([]string, 0, len(m))
	for _, v := range m {
		values = append(values, v)
	}
	return values
}

func TestSSHCredentials(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	access, err := gitServer.StartSSH()
	f.g.Expect(err).NotTo(HaveOccurred())
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "ssh-creds"}, Data: access.SecretData()})
	f.create(f.newApp("over-ssh", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.URL = access.BaseURL + "/" + f.repo + ".git"
		a.Spec.Git.SecretRef.Name = "ssh-creds"
		a.Spec.Git.FluxSecretRef = nil
	}))
	a := f.waitReady("over-ssh")
	f.g.Expect(a.Status.Commit).To(Equal(f.head()))
	f.g.Expect(f.files(f.path("over-ssh"))).To(HaveKey("deployment.yaml"))
	// The push key never enters the vCluster: without fluxSecretRef Flux fetches anonymously.
	f.g.Expect(f.vc(&corev1.Secret{}, "flux-system", f.ns+"-over-ssh-git")).To(BeFalse())
	repo := &sourcev1.GitRepository{}
	f.g.Expect(f.vc(repo, "flux-system", f.ns+"-over-ssh")).To(BeTrue())
	f.g.Expect(repo.Spec.SecretRef).To(BeNil())

	// A known_hosts that does not hold the server's key: the host is not trusted, which is an
	// authentication failure, not an outage.
	wrongHosts, err := access.KnownHostsWithOtherKey()
	f.g.Expect(err).NotTo(HaveOccurred())
	data := access.SecretData()
	data["known_hosts"] = wrongHosts
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "ssh-wrong-host"}, Data: data})
	f.update("over-ssh", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.App.Image = "ghcr.io/example/over-ssh:2"
		a.Spec.Git.SecretRef.Name = "ssh-wrong-host"
	})
	f.waitCondition("over-ssh", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitAuthFailed)
	// Deletion needs working credentials to remove the folder.
	f.update("over-ssh", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.SecretRef.Name = "ssh-creds" })
	f.waitReady("over-ssh")
}

func TestHTTPSTokenCredentials(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "token"},
		Data:       map[string][]byte{"token": []byte(gitServer.Password)},
	})
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "read-token", Labels: fluxCredentialsLabel},
		Data:       map[string][]byte{"username": []byte(gitServer.ReadUser), "token": []byte(gitServer.ReadPassword)},
	})
	f.create(f.newApp("tokened", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.SecretRef.Name = "token"
		a.Spec.Git.FluxSecretRef.Name = "read-token"
	}))
	f.waitReady("tokened")
	f.g.Expect(f.files(f.path("tokened"))).To(HaveKey("deployment.yaml"))
	// Flux gets the read-only token, as Flux's username and password.
	creds := &corev1.Secret{}
	f.g.Expect(f.vc(creds, "flux-system", f.ns+"-tokened-git")).To(BeTrue())
	f.g.Expect(creds.Data).To(Equal(map[string][]byte{"username": []byte(gitServer.ReadUser), "password": []byte(gitServer.ReadPassword)}))
}

func TestPasswordInGitURLIsRefused(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("leaky", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.URL = strings.Replace(f.gitURL(), "http://", "http://git:"+gitServer.Password+"@", 1)
	}))
	a := f.waitCondition("leaky", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitFailed)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionManifestsCommitted)).To(ContainSubstring("embeds a password"))
	assertNoSecretsIn(f, conditionMessage(a, kubeoperav1alpha1.ConditionManifestsCommitted))
	f.g.Expect(f.head()).To(BeEmpty())
	f.g.Expect(f.vc(&sourcev1.GitRepository{}, "flux-system", f.ns+"-leaky")).To(BeFalse())
}

func TestFiftyRepositoriesLeaveNoCloneOrQueueBehind(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	clones := func() []string {
		entries, err := os.ReadDir(gitCacheDir)
		f.g.Expect(err).NotTo(HaveOccurred())
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	// Every earlier test deleted its apps, so nothing should be kept.
	f.g.Expect(reconciler.GitRepositories()).To(BeZero(), "queues left by earlier tests")
	f.g.Expect(clones()).To(BeEmpty(), "clones left by earlier tests")
	const n = 50
	for i := range n {
		name := fmt.Sprintf("r%02d", i)
		f.create(f.newApp(name, "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
			a.Spec.Git.URL = gitServer.URL(f.ns + "-" + name)
		}))
	}
	for i := range n {
		f.waitReady(fmt.Sprintf("r%02d", i))
	}
	f.g.Expect(reconciler.GitRepositories()).To(Equal(n))
	f.g.Expect(clones()).To(HaveLen(n))
	for i := range n {
		f.deleteApp(fmt.Sprintf("r%02d", i))
	}
	for i := range n {
		f.waitGone(fmt.Sprintf("r%02d", i))
	}
	f.g.Eventually(reconciler.GitRepositories).Should(BeZero())
	f.g.Eventually(clones).Should(BeEmpty())
	// The Tenant's vCluster client went with the last app placed in it.
	f.g.Eventually(reconciler.VClusterClients).Should(BeZero())
}

// A branch the repository does not have is refused (GitBranchNotFound, nothing pushed) unless
// the app asks for it with kubeopera.io/create-git-branch: "true"; an empty repository gets its
// first branch without asking. Before, a mistyped branch was silently created as an orphan.
func TestMissingBranchIsRefusedUnlessAsked(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	mainHead, err := gitServer.PushOutsideCommit(f.repo, "main", "README.md", "tenant apps\n")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.create(f.newApp("brancher", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Branch = "relase" }))
	a := f.waitCondition("brancher", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitBranchNotFound)
	f.g.Expect(conditionMessage(a, kubeoperav1alpha1.ConditionManifestsCommitted)).To(ContainSubstring(kubeoperav1alpha1.AnnotationCreateGitBranch))
	f.g.Expect(findCondition(a, kubeoperav1alpha1.ConditionReady).Reason).To(Equal(kubeoperav1alpha1.ReasonGitBranchNotFound))
	f.waitEvent("brancher", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonGitBranchNotFound)
	head, err := gitServer.Head(f.repo, "relase")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(head).To(BeEmpty(), "the branch was created")
	f.g.Expect(f.head()).To(Equal(mainHead))
	f.g.Expect(f.vc(&sourcev1.GitRepository{}, "flux-system", f.ns+"-brancher")).To(BeFalse(), "Flux was configured for a branch that does not exist")

	f.update("brancher", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Annotations[kubeoperav1alpha1.AnnotationCreateGitBranch] = "true"
	})
	a = f.waitReady("brancher")
	head, err = gitServer.Head(f.repo, "relase")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(head).To(Equal(a.Status.Commit))
	f.g.Expect(f.head()).To(Equal(mainHead))

	// An empty repository: its first branch needs no annotation.
	empty := f.repo + "-empty"
	f.create(f.newApp("first", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.URL = gitServer.URL(empty)
		a.Spec.Git.Branch = "release"
	}))
	a = f.waitReady("first")
	head, err = gitServer.Head(empty, "release")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(head).To(Equal(a.Status.Commit))
}

// A 403 is not dead credentials. The old repository of a moved app answers 403 for a while (a
// rate limit, an IP allow-list), with a body of its own: the move keeps retrying (GitForbidden)
// instead of leaving the old folder behind, the body reaches neither the status nor an Event, and
// once the host answers again the old folder is removed.
func TestMoveRetriesThroughA403(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("patient", "t1"))
	f.waitReady("patient")
	oldRepo, oldPath := f.repo, f.path("patient")
	const body = "rate limit exceeded for 10.0.7.12 (internal-proxy-s3cret)"
	gitServer.Forbid(oldRepo, body)
	t.Cleanup(func() { gitServer.Allow(oldRepo) })

	f.update("patient", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = gitServer.URL(oldRepo + "-new") })
	a := f.waitCondition("patient", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonGitForbidden)
	msg := conditionMessage(a, kubeoperav1alpha1.ConditionManifestsCommitted)
	f.g.Expect(msg).To(ContainSubstring("remove the old folder"))
	f.g.Expect(msg).To(ContainSubstring("HTTP 403"))
	f.g.Expect(msg).NotTo(ContainSubstring("internal-proxy-s3cret"), "the server's body is not shown")
	f.waitEvent("patient", corev1.EventTypeWarning, kubeoperav1alpha1.ReasonGitForbidden)
	for _, e := range f.events("patient") {
		f.g.Expect(e.Note).NotTo(ContainSubstring("internal-proxy-s3cret"))
		f.g.Expect(e.Reason).NotTo(Equal(kubeoperav1alpha1.ReasonOldFolderLeft), "a 403 does not abandon the old folder")
	}
	f.g.Expect(f.get("patient").Status.Repository).To(Equal(gitServer.URL(oldRepo)), "the placement still names the old folder")

	gitServer.Allow(oldRepo)
	a = f.waitReady("patient")
	f.g.Expect(a.Status.Repository).To(Equal(gitServer.URL(oldRepo + "-new")))
	old, err := gitServer.Files(oldRepo, "main", oldPath)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(old).To(BeEmpty(), "the old folder is removed once the host answers again")
}
