package app_test

import (
	"context"
	"fmt"
	pathpkg "path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/apptest"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/testfixture"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// gitSecret is the Git credentials Secret every fixture creates: the operator pushes with it.
	gitSecret = "git-credentials"
	// fluxSecret is the read-only credentials Secret every fixture creates, for Flux.
	fluxSecret = "git-readonly"
)

// fixture is one CloudSpace: a host namespace with Tenants, a Git credentials Secret and a
// repository of its own. Apps left at the end of the test are deleted and waited for, so no
// test's apps keep working in the background of the next one.
type fixture struct {
	t          *testing.T
	g          Gomega
	ctx        context.Context
	ns         string
	cloudSpace string
	repo       string
}

// requireSuite skips t when the envtest suite did not start under -short (suiteSkipped); any
// other failure to start already failed the package in TestMain.
func requireSuite(t *testing.T) {
	t.Helper()
	if suiteSkipped != nil {
		t.Skip(suiteSkipped)
	}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	requireSuite(t)
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(timeout)
	g.SetDefaultEventuallyPollingInterval(interval)
	ctx := context.Background()
	ns, err := apptest.Namespace(ctx, host.Client, "cs")
	g.Expect(err).NotTo(HaveOccurred())
	f := &fixture{t: t, g: g, ctx: ctx, ns: ns, cloudSpace: "cloudspace-" + ns, repo: ns}
	g.Expect(host.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gitSecret},
		Data:       gitServer.SecretData(),
	})).To(Succeed())
	g.Expect(host.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fluxSecret, Labels: fluxCredentialsLabel},
		Data:       gitServer.ReadOnlySecretData(),
	})).To(Succeed())
	checkNoGitQueuesAtEnd(t)
	t.Cleanup(f.deleteAllApps)
	return f
}

// fluxCredentialsLabel declares a Secret copyable into vClusters for Flux.
var fluxCredentialsLabel = map[string]string{kubeoperav1alpha1.LabelFluxCredentials: "true"}

func (f *fixture) gitURL() string { return gitServer.URL(f.repo) }

// tenant builds Tenant name of the fixture's namespace and CloudSpace, changed by mods.
func (f *fixture) tenant(name string, mods ...testfixture.TenantMod) *tenantv1alpha1.Tenant {
	return testfixture.Tenant(append([]testfixture.TenantMod{
		testfixture.TenantInNamespace(f.ns), testfixture.TenantNamed(name), testfixture.TenantCloudSpace(f.cloudSpace),
	}, mods...)...)
}

// addTenant creates a Tenant of the fixture's CloudSpace, Ready since readySince (zero: not
// Ready), with its exported kubeconfig Secret vc-<name> holding the vCluster's kubeconfig.
func (f *fixture) addTenant(name string, readySince time.Time) *tenantv1alpha1.Tenant {
	f.t.Helper()
	readiness := testfixture.TenantReady(readySince)
	if readySince.IsZero() {
		readiness = testfixture.TenantWithoutConditions()
	}
	t := f.tenant(name, readiness)
	err := apptest.CreateTenant(f.ctx, host.Client, t)
	f.g.Expect(err).NotTo(HaveOccurred())
	f.g.Expect(host.Client.Create(f.ctx, apptest.KubeconfigSecret(f.ns, "vc-"+name, vclusterKubeconfig))).To(Succeed())
	return t
}

// addTenantIn creates a Ready Tenant of the fixture's CloudSpace whose exported kubeconfig Secret
// vc-<name> holds kubeconfig (a vCluster of the test's own, ownVCluster).
func (f *fixture) addTenantIn(name string, kubeconfig []byte) {
	f.t.Helper()
	err := apptest.CreateTenant(f.ctx, host.Client, f.tenant(name, testfixture.TenantReady(time.Now())))
	f.g.Expect(err).NotTo(HaveOccurred())
	f.create(apptest.KubeconfigSecret(f.ns, "vc-"+name, kubeconfig))
}

// vclusterCRDDirs are the directories of the Flux CRDs and of cert-manager's Certificate CRD, the
// kinds a vCluster of the test bed serves.
func vclusterCRDDirs(t *testing.T) (flux, certManager string) {
	t.Helper()
	flux, err := apptest.FluxCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	if certManager, err = apptest.CertManagerCRDDir(); err != nil {
		t.Fatal(err)
	}
	return flux, certManager
}

// ownVCluster starts an API server that stands in for a vCluster of the test's own, serving the
// CRDs of crdDirs, and returns it with a cluster-admin kubeconfig. Call it before newFixture:
// cleanups run last registered first, so it is stopped after the fixture's apps are gone.
func ownVCluster(t *testing.T, what string, crdDirs ...string) (*apptest.Cluster, []byte) {
	t.Helper()
	requireSuite(t)
	vc, err := apptest.StartCluster(crdDirs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(what, vc.Stop) })
	kubeconfig, err := vc.Kubeconfig("vcluster-admin")
	if err != nil {
		t.Fatal(err)
	}
	return vc, kubeconfig
}

// newApp builds an app of the fixture (its repository, its Git Secrets, tenantCRName = tenant)
// with the example workload, changed by mods.
func (f *fixture) newApp(name, tenant string, mods ...testfixture.AppMod) *kubeoperav1alpha1.KubeOperaApp {
	return testfixture.KubeOperaApp(append([]testfixture.AppMod{
		testfixture.AppInNamespace(f.ns), testfixture.AppNamed(name),
		testfixture.AppCloudSpace(f.cloudSpace), testfixture.AppTenant(tenant), testfixture.AppExampleWorkload(name),
		testfixture.AppGitURL(f.gitURL()), testfixture.AppGitSecret(gitSecret), testfixture.AppFluxSecret(fluxSecret),
	}, mods...)...)
}

func (f *fixture) create(objs ...client.Object) {
	f.t.Helper()
	for _, o := range objs {
		f.g.Expect(host.Client.Create(f.ctx, o)).To(Succeed())
	}
}

func (f *fixture) get(name string) *kubeoperav1alpha1.KubeOperaApp {
	f.t.Helper()
	a := &kubeoperav1alpha1.KubeOperaApp{}
	f.g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, a)).To(Succeed())
	return a
}

// update changes the app (retrying on conflicts).
func (f *fixture) update(name string, mutate func(*kubeoperav1alpha1.KubeOperaApp)) {
	f.t.Helper()
	f.g.Eventually(func() error {
		a := f.get(name)
		mutate(a)
		return host.Client.Update(f.ctx, a)
	}).Should(Succeed())
}

// poke makes the reconciler look at the app again (an annotation change is a manual retry).
func (f *fixture) poke(name string) {
	f.update(name, func(a *kubeoperav1alpha1.KubeOperaApp) {
		if a.Annotations == nil {
			a.Annotations = map[string]string{}
		}
		a.Annotations["test/poke"] = time.Now().String()
	})
}

// waitMorePasses waits until the reconciler has finished n more passes of the app than it had
// when called: the positive signal a "nothing changed" check waits for, instead of a time window.
func (f *fixture) waitMorePasses(name string, n int) {
	f.t.Helper()
	start := passes.of(f.ns, name)
	f.g.Eventually(func() int { return passes.of(f.ns, name) }).Should(BeNumerically(">=", start+n),
		"passes of %s after %d", name, start)
}

// pokeAndWait pokes the app and waits until a pass has finished since.
func (f *fixture) pokeAndWait(name string) {
	f.t.Helper()
	start := passes.of(f.ns, name)
	f.poke(name)
	f.g.Eventually(func() int { return passes.of(f.ns, name) }).Should(BeNumerically(">", start), "no pass of %s after the poke", name)
}

// waitCondition waits until the app's condition has status and reason for its current
// generation, and returns the app.
func (f *fixture) waitCondition(name, condType string, status metav1.ConditionStatus, reason string) *kubeoperav1alpha1.KubeOperaApp {
	f.t.Helper()
	var a *kubeoperav1alpha1.KubeOperaApp
	f.g.Eventually(func(g Gomega) {
		a = &kubeoperav1alpha1.KubeOperaApp{}
		g.Expect(host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, a)).To(Succeed())
		c := apimeta.FindStatusCondition(a.Status.Conditions, condType)
		g.Expect(c).NotTo(BeNil(), "condition %s", condType)
		g.Expect(c.Status).To(Equal(status), "condition %s: %s", condType, c.Message)
		g.Expect(c.Reason).To(Equal(reason), "condition %s: %s", condType, c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(a.Generation))
	}).Should(Succeed())
	return a
}

func (f *fixture) waitReady(name string) *kubeoperav1alpha1.KubeOperaApp {
	f.t.Helper()
	return f.waitCondition(name, kubeoperav1alpha1.ConditionReady, metav1.ConditionTrue, kubeoperav1alpha1.ReasonSucceeded)
}

// path is the default folder of the fixture's app name.
func (f *fixture) path(name string) string { return "apps/" + f.ns + "/" + name }

// files returns the files of the folder at the branch head, without ownership markers.
func (f *fixture) files(path string) map[string]string {
	f.t.Helper()
	files := f.allFiles(path)
	for name := range files {
		if pathpkg.Base(name) == gitops.OwnerFile {
			delete(files, name)
		}
	}
	return files
}

// allFiles returns the files of the folder at the branch head, ownership markers included.
func (f *fixture) allFiles(path string) map[string]string {
	f.t.Helper()
	files, err := gitServer.Files(f.repo, "main", path)
	f.g.Expect(err).NotTo(HaveOccurred())
	return files
}

func (f *fixture) commits() []*object.Commit {
	f.t.Helper()
	commits, err := gitServer.Commits(f.repo, "main")
	f.g.Expect(err).NotTo(HaveOccurred())
	return commits
}

func (f *fixture) head() string {
	f.t.Helper()
	h, err := gitServer.Head(f.repo, "main")
	f.g.Expect(err).NotTo(HaveOccurred())
	return h
}

// events returns the Events about the app, oldest first.
func (f *fixture) events(name string) []eventsv1.Event {
	f.t.Helper()
	list := &eventsv1.EventList{}
	f.g.Expect(host.Client.List(f.ctx, list, client.InNamespace(f.ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Regarding.Kind == "KubeOperaApp" {
			out = append(out, e)
		}
	}
	return out
}

// waitEvent waits for an Event about the app with the reason, and returns it.
func (f *fixture) waitEvent(name, eventType, reason string) eventsv1.Event {
	f.t.Helper()
	var found eventsv1.Event
	var seen []string
	f.g.Eventually(func() bool {
		seen = seen[:0]
		for _, e := range f.events(name) {
			if e.Reason == reason && e.Type == eventType {
				found = e
				return true
			}
			seen = append(seen, e.Type+" "+e.Reason+": "+e.Note)
		}
		return false
	}).Should(BeTrue(), func() string {
		return fmt.Sprintf("event %s %s; seen:\n%s", eventType, reason, strings.Join(seen, "\n"))
	})
	return found
}

// vc reads an object from the vCluster; false when it does not exist.
func (f *fixture) vc(obj client.Object, ns, name string) bool {
	f.t.Helper()
	err := vcluster.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	f.g.Expect(err).NotTo(HaveOccurred())
	return true
}

func (f *fixture) deleteApp(name string) {
	f.t.Helper()
	a := &kubeoperav1alpha1.KubeOperaApp{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}}
	f.g.Expect(client.IgnoreNotFound(host.Client.Delete(f.ctx, a))).To(Succeed())
}

func (f *fixture) waitGone(name string) {
	f.t.Helper()
	f.g.Eventually(func() bool {
		err := host.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, &kubeoperav1alpha1.KubeOperaApp{})
		return apierrors.IsNotFound(err)
	}).Should(BeTrue(), "app %s still exists", name)
}

// deleteAllApps deletes the fixture's apps and waits until their cleanup finished.
func (f *fixture) deleteAllApps() {
	beforePush.Store(nil)
	onQueued.Store(nil)
	onExpect.Store(nil)
	onUnexpect.Store(nil)
	statusPatchHook.Store(nil)
	g := NewWithT(f.t)
	list := &kubeoperav1alpha1.KubeOperaAppList{}
	g.Expect(host.Client.List(f.ctx, list, client.InNamespace(f.ns))).To(Succeed())
	for i := range list.Items {
		g.Expect(client.IgnoreNotFound(host.Client.Delete(f.ctx, &list.Items[i]))).To(Succeed())
	}
	g.Eventually(func() ([]kubeoperav1alpha1.KubeOperaApp, error) {
		err := host.Client.List(f.ctx, list, client.InNamespace(f.ns))
		return list.Items, err
	}, 60*time.Second, 200*time.Millisecond).Should(BeEmpty(), "apps of the test are stuck in deletion")
}

// gitQueuesChecked holds the tests whose end already checks the Git writer's queues.
var gitQueuesChecked sync.Map

// checkNoGitQueuesAtEnd registers, once per test and before the first fixture's app cleanup (so
// it runs after every fixture's), the check that with the test's apps gone the Git writer keeps
// no more queues than when the test started: a write still queued when the last app of a
// repository left is released once done. (Compared with the start, so that a queue an earlier
// test left fails that test only.)
func checkNoGitQueuesAtEnd(t *testing.T) {
	if _, done := gitQueuesChecked.LoadOrStore(t, true); done {
		return
	}
	before := reconciler.GitRepositories()
	t.Cleanup(func() {
		gitQueuesChecked.Delete(t)
		NewWithT(t).Eventually(reconciler.GitRepositories, 10*time.Second, 50*time.Millisecond).Should(BeNumerically("<=", before),
			"Git queues left behind by the test's deleted apps")
	})
}

func findCondition(a *kubeoperav1alpha1.KubeOperaApp, condType string) *metav1.Condition {
	return apimeta.FindStatusCondition(a.Status.Conditions, condType)
}
