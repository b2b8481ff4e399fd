package testfixture

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenantv1alpha1 "github.com/kubeopera/kubeopera-operator/api/external/tenant/v1alpha1"
	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// The default app is valid and names the default Tenant; each call builds a new object.
func TestKubeOperaAppDefaults(t *testing.T) {
	g := NewWithT(t)
	a := KubeOperaApp()
	g.Expect(a.Namespace).To(Equal(AppNamespace))
	g.Expect(a.Name).To(Equal(AppName))
	g.Expect(a.Generation).To(Equal(int64(1)))
	g.Expect(a.UID).To(BeEmpty())
	g.Expect(a.Spec.CloudSpaceID).To(Equal(CloudSpaceID))
	g.Expect(a.Spec.TenantCRName).To(Equal(TenantName))
	g.Expect(a.Spec.App.Image).To(Equal("nginx"))
	g.Expect(a.Spec.Git.URL).To(Equal("https://git.example.com/apps.git"))
	g.Expect(a.Status).To(Equal(kubeoperav1alpha1.KubeOperaAppStatus{}))

	KubeOperaApp(AppNamed("other"), AppGitSecret("s")).Spec.App.Image = "changed"
	g.Expect(KubeOperaApp()).To(Equal(a), "a mod of an earlier call does not leak")
}

func TestKubeOperaAppMods(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	ports := []kubeoperav1alpha1.AppPort{{Name: "http", ContainerPort: 8080, ServicePort: 80}}
	ing := kubeoperav1alpha1.IngressSpec{Host: "web.example.com", TLS: true, ClusterIssuer: "ca"}
	a := KubeOperaApp(
		AppNamed("a"), AppInNamespace("team"), AppUID("uid-1"), AppGeneration(7), AppCreated(at), AppDeleting(at),
		AppFinalizers("f"), AppAnnotations(map[string]string{"k": "v"}), AppLabels(map[string]string{"l": "w"}),
		AppCloudSpace("cs-2"), AppTenant(""), AppPlacedIn("team", "t2"),
		AppImage("img:1"), AppReplicas(3), AppPorts(ports...), AppIngress(ing),
		AppGitURL("ssh://git.example.com/x.git"), AppGitBranch("dev"), AppGitPath("apps/x"),
		AppGitSecret("push"), AppFluxSecret("pull"),
	)
	g.Expect(a.Name).To(Equal("a"))
	g.Expect(a.Namespace).To(Equal("team"))
	g.Expect(a.UID).To(BeEquivalentTo("uid-1"))
	g.Expect(a.Generation).To(Equal(int64(7)))
	g.Expect(a.CreationTimestamp).To(Equal(metav1.NewTime(at)))
	g.Expect(a.DeletionTimestamp).To(Equal(&metav1.Time{Time: at}))
	g.Expect(a.Finalizers).To(Equal([]string{"f"}))
	g.Expect(a.Annotations).To(Equal(map[string]string{"k": "v"}))
	g.Expect(a.Labels).To(Equal(map[string]string{"l": "w"}))
	g.Expect(a.Spec.CloudSpaceID).To(Equal("cs-2"))
	g.Expect(a.Spec.TenantCRName).To(BeEmpty())
	g.Expect(a.Status.Tenant).To(Equal(&kubeoperav1alpha1.TenantReference{Namespace: "team", Name: "t2"}))
	g.Expect(a.Spec.App.Image).To(Equal("img:1"))
	g.Expect(a.Spec.App.Replicas).To(HaveValue(Equal(int32(3))))
	g.Expect(a.Spec.App.Ports).To(Equal(ports))
	g.Expect(a.Spec.Ingress).To(Equal(&ing))
	g.Expect(a.Spec.Git).To(Equal(kubeoperav1alpha1.GitSpec{
		URL: "ssh://git.example.com/x.git", Branch: "dev", Path: "apps/x",
		SecretRef:     &kubeoperav1alpha1.LocalSecretReference{Name: "push"},
		FluxSecretRef: &kubeoperav1alpha1.LocalSecretReference{Name: "pull"},
	}))

	// A later mod overrides an earlier one.
	g.Expect(KubeOperaApp(AppImage("a"), AppImage("b")).Spec.App.Image).To(Equal("b"))
}

// The example workload sets the app's image, replicas, ports and branch, and nothing else.
func TestAppExampleWorkload(t *testing.T) {
	g := NewWithT(t)
	httpPort := []kubeoperav1alpha1.AppPort{{Name: "http", ContainerPort: 8080, ServicePort: 80}}
	g.Expect(KubeOperaApp(AppHTTPPort()).Spec.App.Ports).To(Equal(httpPort))

	a := KubeOperaApp(AppExampleWorkload("shop"))
	g.Expect(a.Spec.App).To(Equal(kubeoperav1alpha1.AppSpec{
		Image: "ghcr.io/example/shop:1.0.0", Replicas: ptr.To[int32](1), Ports: httpPort,
	}))
	g.Expect(a.Spec.Git).To(Equal(kubeoperav1alpha1.GitSpec{URL: "https://git.example.com/apps.git", Branch: "main"}))
	want := KubeOperaApp()
	want.Spec.App, want.Spec.Git = a.Spec.App, a.Spec.Git
	g.Expect(a).To(Equal(want), "only the workload and the branch change")
}

// The default Tenant is the one the default app names, Ready, of the app's CloudSpace.
func TestTenantDefaults(t *testing.T) {
	g := NewWithT(t)
	tn := Tenant()
	g.Expect(tn.Namespace).To(Equal(AppNamespace))
	g.Expect(tn.Name).To(Equal(TenantName))
	g.Expect(tn.Labels).To(Equal(map[string]string{tenantv1alpha1.CloudSpaceLabel: CloudSpaceID}))
	g.Expect(tn.Spec.CloudSpaceID).To(Equal(CloudSpaceID))
	g.Expect(tn.Status.Conditions).To(Equal([]metav1.Condition{{
		Type: tenantv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Test",
		LastTransitionTime: metav1.NewTime(TenantReadySince),
	}}))
}

func TestTenantMods(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	tn := Tenant(TenantNamed("vc"), TenantInNamespace("team"), TenantCloudSpace("cs-2"), TenantNotReady(at))
	g.Expect(tn.Name).To(Equal("vc"))
	g.Expect(tn.Namespace).To(Equal("team"))
	g.Expect(tn.Labels).To(Equal(map[string]string{tenantv1alpha1.CloudSpaceLabel: "cs-2"}))
	g.Expect(tn.Spec.CloudSpaceID).To(Equal("cs-2"))
	g.Expect(tn.Status.Conditions).To(HaveLen(1))
	g.Expect(tn.Status.Conditions[0].Status).To(Equal(metav1.ConditionFalse))
	g.Expect(tn.Status.Conditions[0].LastTransitionTime).To(Equal(metav1.NewTime(at)))

	g.Expect(Tenant(TenantNotReady(at), TenantReady(at)).Status.Conditions[0].Status).To(Equal(metav1.ConditionTrue),
		"a later mod overrides an earlier one")

	g.Expect(Tenant(TenantWithoutConditions()).Status.Conditions).To(BeNil())
	g.Expect(Tenant(TenantWithoutConditions(), TenantReady(at)).Status.Conditions).To(HaveLen(1),
		"a later mod overrides an earlier one")

	unlabelled := Tenant(TenantCloudSpace(""))
	g.Expect(unlabelled.Labels).To(BeNil())
	g.Expect(unlabelled.Spec.CloudSpaceID).To(BeEmpty())
}
