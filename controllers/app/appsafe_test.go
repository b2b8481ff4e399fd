package app_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// The push credential never enters a vCluster. Every Secret the vCluster holds
// (all namespaces: the Flux copy, the pull Secret, anything else) is tried as push credentials
// against the real Git server, in every way a Git client could use its values; every push is
// refused. The push credentials themselves can push (the probe is able to fail), and the Flux
// copy can fetch (Flux still works).
func TestVClusterHoldsNoSecretThatCanPush(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)},
	})
	f.create(f.newApp("web", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Registry = &kubeoperav1alpha1.RegistrySpec{SecretRef: kubeoperav1alpha1.LocalSecretReference{Name: "pull"}}
	}))
	f.waitReady("web")

	// The positive control: the host's push credentials push.
	f.g.Expect(gitServer.TryPush(f.repo, "probe-push-creds", &githttp.BasicAuth{Username: gitServer.User, Password: gitServer.Password})).
		To(Succeed(), "the probe cannot tell a push credential")

	// Flux reads the copy of the read-only credentials, which can fetch.
	repo := &sourcev1.GitRepository{}
	f.g.Expect(f.vc(repo, "flux-system", f.ns+"-web")).To(BeTrue())
	f.g.Expect(repo.Spec.SecretRef).NotTo(BeNil())
	copied := &corev1.Secret{}
	f.g.Expect(f.vc(copied, "flux-system", repo.Spec.SecretRef.Name)).To(BeTrue())
	f.g.Expect(copied.Data).To(Equal(gitServer.ReadOnlySecretData()))
	_, err := gitServer.Files(f.repo, "main", f.path("web"))
	f.g.Expect(err).NotTo(HaveOccurred())

	list := &corev1.SecretList{}
	f.g.Expect(vcluster.Client.List(f.ctx, list)).To(Succeed())
	f.g.Expect(list.Items).NotTo(BeEmpty())
	tried := 0
	for i := range list.Items {
		s := &list.Items[i]
		for j, auth := range pushAttempts(s.Data) {
			probe := fmt.Sprintf("probe-%s-%s-%d", s.Namespace, s.Name, j)
			f.g.Expect(gitServer.TryPush(f.repo, probe, auth)).NotTo(Succeed(),
				"Secret %s/%s of the vCluster can push", s.Namespace, s.Name)
			tried++
		}
	}
	f.g.Expect(tried).To(BeNumerically(">=", 3), "the Flux copy and the pull Secret were tried")
}

// pushAttempts are the ways a Git client could authenticate with a Secret's values: each value
// as the password of the Secret's username (or "git", or the test server's push user), and as a
// bearer token.
func pushAttempts(data map[string][]byte) []transport.AuthMethod {
	users := []string{"git", gitServer.User}
	if u := string(data["username"]); u != "" {
		users = append(users, u)
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []transport.AuthMethod
	for _, k := range keys {
		v := string(data[k])
		for _, u := range users {
			out = append(out, &githttp.BasicAuth{Username: u, Password: v})
		}
		out = append(out, &githttp.TokenAuth{Token: v})
	}
	return out
}

// An app created by an earlier version had its push credentials copied into
// the vCluster; the next pass deletes that copy when the app names no Flux credentials.
func TestPushCredentialsCopyIsRemovedFromTheVCluster(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("legacy", "t1"))
	f.waitReady("legacy")
	name := f.ns + "-legacy-git"
	f.g.Expect(f.vc(&corev1.Secret{}, "flux-system", name)).To(BeTrue())

	f.update("legacy", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.FluxSecretRef = nil })
	f.g.Eventually(func() bool { return f.vc(&corev1.Secret{}, "flux-system", name) }).Should(BeFalse())
	repo := &sourcev1.GitRepository{}
	f.g.Eventually(func() *sourcev1.GitRepositorySpec {
		f.vc(repo, "flux-system", f.ns+"-legacy")
		return &repo.Spec
	}).Should(HaveField("SecretRef", BeNil()))
}

// Deletion removes the files the app wrote, not what someone else added to its
// folder, and never a folder it did not write.
func TestDeletionRemovesOnlyWhatTheAppWrote(t *testing.T) {
	f := newFixture(t)
	f.addTenant("t1", time.Now())
	f.create(f.newApp("web", "t1"))
	f.waitReady("web")
	_, err := gitServer.PushOutsideCommit(f.repo, "main", f.path("web")+"/NOTES.md", "a person's notes")
	f.g.Expect(err).NotTo(HaveOccurred())

	// An app whose path holds a folder no app wrote is refused, and its deletion leaves it.
	_, err = gitServer.PushOutsideCommit(f.repo, "main", f.path("handmade")+"/README.md", "hand-written")
	f.g.Expect(err).NotTo(HaveOccurred())
	f.create(f.newApp("intruder", "t1", func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = f.path("handmade") }))
	f.waitCondition("intruder", kubeoperav1alpha1.ConditionManifestsCommitted, metav1.ConditionFalse, kubeoperav1alpha1.ReasonFolderNotOwned)

	f.deleteApp("web")
	f.deleteApp("intruder")
	f.waitGone("web")
	f.waitGone("intruder")
	f.g.Expect(f.allFiles(f.path("web"))).To(Equal(map[string]string{"NOTES.md": "a person's notes"}))
	f.g.Expect(f.allFiles(f.path("handmade"))).To(Equal(map[string]string{"README.md": "hand-written"}))
}
