package render

import (
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitcred"
)

// GitRepository renders the app's Flux GitRepository: the app's repository and branch, read with
// the copy of the read-only credentials of spec.git.fluxSecretRef when the app names them (the
// push credentials of spec.git.secretRef never enter the vCluster), anonymously otherwise. The
// URL is used as written: credentials never go into it.
//
// The source is limited to the app's folder (spec.sparseCheckout, SparseCheckoutDir; folder is
// the app's folder in the repository, Path): the artifact source-controller builds, which
// kustomize-controller downloads and anyone in the vCluster can read from source-controller's
// storage, holds no other app's or tenant's files.
func GitRepository(app *kubeoperav1alpha1.KubeOperaApp, folder string) (*sourcev1.GitRepository, error) {
	interval, err := FluxInterval(app)
	if err != nil {
		return nil, err
	}
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: fluxMeta(app, FluxName(app)),
		Spec: sourcev1.GitRepositorySpec{
			URL:            app.Spec.Git.URL,
			Interval:       metav1.Duration{Duration: interval},
			Reference:      &sourcev1.GitRepositoryRef{Branch: Branch(app)},
			SparseCheckout: []string{SparseCheckoutDir(folder)},
		},
	}
	if app.Spec.Git.FluxSecretRef != nil {
		repo.Spec.SecretRef = &meta.LocalObjectReference{Name: GitSecretName(app)}
	}
	return repo, nil
}

// SparseCheckoutDir is the app's folder as the GitRepository's sparse checkout directory, with a
// trailing "/": source-controller hands the directories to go-git, which keeps a file when its
// path starts with a directory as a string, so "apps/cs/web" would also keep the files of
// "apps/cs/web-2" and "apps/cs/web.yaml". source-controller checks that the directory exists in
// the fetched commit (the operator commits the folder before it applies the GitRepository).
func SparseCheckoutDir(folder string) string {
	return folder + "/"
}

// Kustomization renders the app's Flux Kustomization: the app's folder of the GitRepository,
// applied into the app namespace with prune on (deleting the Kustomization deletes what it
// applied) and wait on: Flux reports Ready only once every applied object is healthy (the
// Deployment's replicas available), within spec.timeout, which is the interval (without it
// kustomize-controller gives the health checks the interval less 30s, at least 30s: 30s for the
// default interval). The operator's Synced condition follows that Ready, so Synced means
// running, not merely applied.
//
// Flux applies as the app's ServiceAccount (FluxServiceAccount), which may write only the kinds
// the app renders, only in the app namespace (FluxRole): not as kustomize-controller's own
// cluster-wide rights, and it works under Flux's multi-tenancy lockdown. folder is the app's
// folder in the repository (Path).
func Kustomization(app *kubeoperav1alpha1.KubeOperaApp, folder string) (*kustomizev1.Kustomization, error) {
	interval, err := FluxInterval(app)
	if err != nil {
		return nil, err
	}
	return &kustomizev1.Kustomization{
		TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
		ObjectMeta: fluxMeta(app, FluxName(app)),
		Spec: kustomizev1.KustomizationSpec{
			Interval:           metav1.Duration{Duration: interval},
			Timeout:            &metav1.Duration{Duration: interval},
			ServiceAccountName: FluxServiceAccountName(app),
			Path:               "./" + folder,
			Prune:              true,
			Wait:               true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{
				APIVersion: sourcev1.GroupVersion.String(),
				Kind:       sourcev1.GitRepositoryKind,
				Name:       FluxName(app),
				Namespace:  FluxNamespace(app),
			},
			TargetNamespace: TargetNamespace(app),
		},
	}, nil
}

// FluxGitSecret renders the copy of the app's read-only Flux credentials (spec.git.fluxSecretRef)
// for Flux in the vCluster, from the host Secret's data, in Flux's GitRepository Secret format.
// Only the keys the App Controller accepts for the URL's transport are copied (gitcred.SSHKeys:
// identity, known_hosts and the key's passphrase in password; gitcred.HTTPKeys: username,
// password, bearerToken and ca.crt), so nothing else in the host Secret reaches the vCluster.
// Flux reads these keys with the same meaning, but it has no token key: an HTTPS token becomes
// password, with username gitcred.DefaultTokenUser unless the Secret names one.
func FluxGitSecret(app *kubeoperav1alpha1.KubeOperaApp, data map[string][]byte) *corev1.Secret {
	keys := gitcred.HTTPKeys()
	if strings.HasPrefix(app.Spec.Git.URL, "ssh://") {
		keys = gitcred.SSHKeys()
	}
	out := map[string][]byte{}
	for _, k := range keys {
		if v := data[k]; len(v) > 0 {
			out[k] = v
		}
	}
	if token := out[gitcred.Token]; len(token) > 0 {
		delete(out, gitcred.Token)
		out[gitcred.Password] = token
		if len(out[gitcred.Username]) == 0 {
			out[gitcred.Username] = []byte(gitcred.DefaultTokenUser)
		}
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: fluxMeta(app, GitSecretName(app)),
		Type:       corev1.SecretTypeOpaque,
		Data:       out,
	}
}

// RegistrySecret renders the copy of the app's registry pull Secret in the app namespace of the
// vCluster: same name, type and data as the host Secret.
func RegistrySecret(app *kubeoperav1alpha1.KubeOperaApp, host *corev1.Secret) *corev1.Secret {
	data := make(map[string][]byte, len(host.Data))
	for k, v := range host.Data {
		data[k] = v
	}
	typ := host.Type
	if typ == "" {
		typ = corev1.SecretTypeDockerConfigJson
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      host.Name,
			Namespace: TargetNamespace(app),
			Labels:    map[string]string{LabelManagedBy: ManagedBy},
		},
		Type: typ,
		Data: data,
	}
}

// FluxServiceAccount renders the ServiceAccount the app's Kustomization applies as, in the Flux
// namespace (kustomize-controller impersonates a ServiceAccount of the Kustomization's own
// namespace). It has no rights of its own beyond FluxRole.
func FluxServiceAccount(app *kubeoperav1alpha1.KubeOperaApp) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: fluxMeta(app, FluxServiceAccountName(app)),
	}
}

// FluxRole renders the Role of the app's ServiceAccount in the app namespace: exactly what
// kustomize-controller needs to apply, prune and health-check the rendered objects
// (server-side apply is a patch that may create; pruning deletes; the Deployment's health is
// read from its ReplicaSets and Pods). No Secrets: the pull Secret is copied by the operator,
// the TLS Secret is cert-manager's, and nothing Flux applies is one.
func FluxRole(app *kubeoperav1alpha1.KubeOperaApp) *rbacv1.Role {
	write := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	read := []string{"get", "list", "watch"}
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: appNamespaceMeta(app, FluxServiceAccountName(app)),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: write},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: write},
			{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: write},
			{APIGroups: []string{"apps"}, Resources: []string{"replicasets"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
		},
	}
}

// FluxRoleBinding binds FluxRole to the app's ServiceAccount.
func FluxRoleBinding(app *kubeoperav1alpha1.KubeOperaApp) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: appNamespaceMeta(app, FluxServiceAccountName(app)),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: FluxServiceAccountName(app)},
		Subjects: []rbacv1.Subject{{
			Kind: rbacv1.ServiceAccountKind, Name: FluxServiceAccountName(app), Namespace: FluxNamespace(app),
		}},
	}
}

// FluxNamespaceObject renders the Flux namespace, which the operator creates when Flux's own
// installation has not (and never deletes).
func FluxNamespaceObject(app *kubeoperav1alpha1.KubeOperaApp) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   FluxNamespace(app),
			Labels: map[string]string{LabelManagedBy: ManagedBy},
		},
	}
}

// AppNamespace renders the app namespace created directly in the vCluster (never through Git).
func AppNamespace(app *kubeoperav1alpha1.KubeOperaApp) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   TargetNamespace(app),
			Labels: map[string]string{LabelManagedBy: ManagedBy},
		},
	}
}

// appNamespaceMeta is the metadata of an object the operator writes in the app namespace.
func appNamespaceMeta(app *kubeoperav1alpha1.KubeOperaApp, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: TargetNamespace(app),
		Labels: map[string]string{
			LabelManagedBy: ManagedBy,
			LabelName:      app.Name,
		},
	}
}

func fluxMeta(app *kubeoperav1alpha1.KubeOperaApp, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: FluxNamespace(app),
		Labels: map[string]string{
			LabelManagedBy: ManagedBy,
			LabelName:      app.Name,
		},
	}
}
