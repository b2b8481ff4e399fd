package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
	"time"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
)

// Defaults of optional KubeOperaApp fields. The CRD defaults some of them too; the renderer
// applies them again so that an object written without the defaulting webhook (or by an older
// CRD) renders the same.
const (
	DefaultBranch        = "main"
	DefaultFluxNamespace = "flux-system"
	DefaultFluxInterval  = time.Minute
	// DefaultPathPrefix is the folder of an apps repository the App Controller writes in unless
	// it is started with another (--app-git-path-prefix).
	DefaultPathPrefix = "apps"
)

// Label keys and values put on every rendered object.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "kubeopera-operator"
)

// maxNameLength is the longest name given to a derived object: Flux copies the Kustomization's
// name into label values on everything it applies, and label values stop at 63 characters.
const maxNameLength = 63

// TargetNamespace is the app's namespace inside the vCluster: spec.targetNamespace, or the app's
// name.
func TargetNamespace(app *kubeoperav1alpha1.KubeOperaApp) string {
	if app.Spec.TargetNamespace != "" {
		return app.Spec.TargetNamespace
	}
	return app.Name
}

// Branch is the Git branch the manifests are committed to.
func Branch(app *kubeoperav1alpha1.KubeOperaApp) string {
	if app.Spec.Git.Branch != "" {
		return app.Spec.Git.Branch
	}
	return DefaultBranch
}

// Path is the app's folder in the repository: spec.git.path, or <prefix>/<namespace>/<name> with
// the apps prefix the operator writes in and the app's host namespace and name. That pair is
// unique on the host cluster, so two apps of the same name and target namespace from different
// host namespaces (tenants) sharing one repository never get the same folder. Every folder of an
// app lies in its namespace's folder (NamespaceFolder; the App Controller refuses any other
// spec.git.path), and overlaps inside it are refused by the Git writer's ownership markers.
func Path(app *kubeoperav1alpha1.KubeOperaApp, prefix string) string {
	if app.Spec.Git.Path != "" {
		return path.Clean(app.Spec.Git.Path)
	}
	return path.Join(NamespaceFolder(prefix, app.Namespace), app.Name)
}

// NamespaceFolder is the folder of the apps repository that belongs to host namespace ns: every
// app of ns writes inside it, and no app of another namespace can.
func NamespaceFolder(prefix, ns string) string {
	return path.Join(strings.Trim(prefix, "/"), ns)
}

// FluxNamespace is the namespace of the Flux objects in the vCluster.
func FluxNamespace(app *kubeoperav1alpha1.KubeOperaApp) string {
	if app.Spec.Flux.Namespace != "" {
		return app.Spec.Flux.Namespace
	}
	return DefaultFluxNamespace
}

// FluxInterval is the reconcile interval of the Flux objects.
func FluxInterval(app *kubeoperav1alpha1.KubeOperaApp) (time.Duration, error) {
	if app.Spec.Flux.Interval == "" {
		return DefaultFluxInterval, nil
	}
	d, err := time.ParseDuration(app.Spec.Flux.Interval)
	if err != nil {
		return 0, fmt.Errorf("parse spec.flux.interval: %w", err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("spec.flux.interval %q must be positive", app.Spec.Flux.Interval)
	}
	return d, nil
}

// FluxName names the app's GitRepository and Kustomization in the vCluster: <namespace>-<name>
// of the app on the host, which is unique per app among all apps of one vCluster (they all live
// in the Tenant's host namespace, but the namespace keeps the name unique even if that changes).
// Names longer than 63 characters are cut and end in a hash of the full name, so they stay
// unique and stable.
func FluxName(app *kubeoperav1alpha1.KubeOperaApp) string {
	return boundedName(app.Namespace + "-" + app.Name)
}

// FluxServiceAccountName names the ServiceAccount the app's Kustomization applies as (in the Flux
// namespace) and its Role and RoleBinding (in the app namespace): the Flux objects' name, unique
// per app in the vCluster and at most 63 characters.
func FluxServiceAccountName(app *kubeoperav1alpha1.KubeOperaApp) string {
	return FluxName(app)
}

// GitSecretName names the copy of the Git credentials Secret in the Flux namespace.
func GitSecretName(app *kubeoperav1alpha1.KubeOperaApp) string {
	return boundedName(app.Namespace + "-" + app.Name + "-git")
}

// TLSSecretName names the Secret cert-manager writes the app's certificate to.
func TLSSecretName(app *kubeoperav1alpha1.KubeOperaApp) string {
	return boundedName(app.Name + "-tls")
}

// boundedName returns name, or when it is too long, a prefix of it and a short hash of all of it.
func boundedName(name string) string {
	if len(name) <= maxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := hex.EncodeToString(sum[:])[:8]
	prefix := name[:maxNameLength-len(suffix)-1]
	// A name must end in an alphanumeric character; the suffix does, the cut prefix may end
	// in '-' or '.', which is fine before the '-' separator only if it is not '.'.
	for len(prefix) > 0 && (prefix[len(prefix)-1] == '-' || prefix[len(prefix)-1] == '.') {
		prefix = prefix[:len(prefix)-1]
	}
	return prefix + "-" + suffix
}

// Labels are put on every rendered object.
func Labels(app *kubeoperav1alpha1.KubeOperaApp) map[string]string {
	return map[string]string{
		LabelName:      app.Name,
		LabelManagedBy: ManagedBy,
	}
}

// selectorLabels select the app's pods; a subset of Labels, never changed (a Deployment's
// selector is immutable).
func selectorLabels(app *kubeoperav1alpha1.KubeOperaApp) map[string]string {
	return map[string]string{LabelName: app.Name}
}
