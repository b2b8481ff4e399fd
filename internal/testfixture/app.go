package testfixture

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// The KubeOperaApp that KubeOperaApp builds: its name and namespace, its CloudSpace and the
// Tenant it names (TenantName, which Tenant builds in the same namespace).
const (
	AppName      = "web"
	AppNamespace = "ns"
	CloudSpaceID = "cs-1"
	TenantName   = "t1"
)

// AppMod changes a KubeOperaApp that KubeOperaApp makes; mods apply in order, so a later one
// overrides an earlier one. It is an alias, so a test's own func(*KubeOperaApp) is an AppMod as
// it stands (for what no named modifier below sets, such as status fields).
type AppMod = func(*kubeoperav1alpha1.KubeOperaApp)

// KubeOperaApp is a minimal valid KubeOperaApp, AppName in AppNamespace at generation 1, as the
// API server returns it after a create: CloudSpace CloudSpaceID, Tenant TenantName, image nginx,
// repository https://git.example.com/apps.git, everything else unset (the API server's defaults
// are not applied); then mods are applied in order. It has no UID (AppUID gives it one).
func KubeOperaApp(mods ...AppMod) *kubeoperav1alpha1.KubeOperaApp {
	a := &kubeoperav1alpha1.KubeOperaApp{
		ObjectMeta: metav1.ObjectMeta{Namespace: AppNamespace, Name: AppName, Generation: 1},
		Spec: kubeoperav1alpha1.KubeOperaAppSpec{
			CloudSpaceID: CloudSpaceID,
			TenantCRName: TenantName,
			App:          kubeoperav1alpha1.AppSpec{Image: "nginx"},
			Git:          kubeoperav1alpha1.GitSpec{URL: "https://git.example.com/apps.git"},
		},
	}
	for _, m := range mods {
		m(a)
	}
	return a
}

// AppNamed sets the app's name.
func AppNamed(name string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Name = name }
}

// AppInNamespace sets the app's namespace.
func AppInNamespace(ns string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Namespace = ns }
}

// AppUID sets the app's UID, which the API server assigns on create.
func AppUID(uid types.UID) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.UID = uid }
}

// AppGeneration sets the app's metadata.generation.
func AppGeneration(generation int64) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Generation = generation }
}

// AppCreated sets the app's creation timestamp.
func AppCreated(at time.Time) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.CreationTimestamp = metav1.NewTime(at) }
}

// AppDeleting marks the app as being deleted since at (its deletion timestamp).
func AppDeleting(at time.Time) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.DeletionTimestamp = &metav1.Time{Time: at} }
}

// AppFinalizers sets the app's finalizers.
func AppFinalizers(finalizers ...string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Finalizers = finalizers }
}

// AppAnnotations sets the app's annotations (replacing any set before).
func AppAnnotations(annotations map[string]string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Annotations = annotations }
}

// AppLabels sets the app's labels (replacing any set before).
func AppLabels(labels map[string]string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Labels = labels }
}

// AppCloudSpace sets spec.cloudSpaceId.
func AppCloudSpace(id string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.CloudSpaceID = id }
}

// AppTenant sets spec.tenantCRName; empty lets the operator pick the CloudSpace's Tenant.
func AppTenant(name string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.TenantCRName = name }
}

// AppPlacedIn records in status.tenant that the app was placed in Tenant ns/name.
func AppPlacedIn(ns, name string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Status.Tenant = &kubeoperav1alpha1.TenantReference{Namespace: ns, Name: name}
	}
}

// AppImage sets the container image.
func AppImage(image string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Image = image }
}

// AppReplicas sets the Deployment's replicas.
func AppReplicas(n int32) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Replicas = ptr.To(n) }
}

// AppPorts sets the container and Service ports.
func AppPorts(ports ...kubeoperav1alpha1.AppPort) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.App.Ports = ports }
}

// AppHTTPPort sets one port, named http: the container listens on 8080, the Service serves it
// on 80.
func AppHTTPPort() AppMod {
	return AppPorts(kubeoperav1alpha1.AppPort{Name: "http", ContainerPort: 8080, ServicePort: 80})
}

// AppExampleWorkload gives the app the workload of the example app the suites that run the
// operator against an API server deploy: image ghcr.io/example/<image>:1.0.0 (image is by
// convention the app's name), one replica, one HTTP port (AppHTTPPort), committed to branch
// main.
func AppExampleWorkload(image string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) {
		for _, m := range []AppMod{
			AppImage("ghcr.io/example/" + image + ":1.0.0"), AppReplicas(1), AppHTTPPort(), AppGitBranch("main"),
		} {
			m(a)
		}
	}
}

// AppIngress sets spec.ingress.
func AppIngress(ing kubeoperav1alpha1.IngressSpec) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Ingress = &ing }
}

// AppGitURL sets the repository URL.
func AppGitURL(url string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.URL = url }
}

// AppGitBranch sets the branch the app's folder is committed to.
func AppGitBranch(branch string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Branch = branch }
}

// AppGitPath sets the app's folder in the repository.
func AppGitPath(path string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) { a.Spec.Git.Path = path }
}

// AppGitSecret names the Secret the operator pushes with (spec.git.secretRef).
func AppGitSecret(name string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.SecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: name}
	}
}

// AppFluxSecret names the Secret Flux fetches with (spec.git.fluxSecretRef).
func AppFluxSecret(name string) AppMod {
	return func(a *kubeoperav1alpha1.KubeOperaApp) {
		a.Spec.Git.FluxSecretRef = &kubeoperav1alpha1.LocalSecretReference{Name: name}
	}
}
