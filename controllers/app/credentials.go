package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// The Git credentials of an app (issue 24: a shared and hostile world).
//
//   - spec.git.secretRef is what the operator pushes with. It never leaves the host cluster.
//   - spec.git.fluxSecretRef is what Flux in the vCluster fetches with: copied there, where the
//     tenant's administrators can read it, so it must be read-only (a deploy key or read-only
//     token of this tenant). Empty: Flux fetches anonymously. A Secret the operator pushes with
//     is refused (FluxSecretRefused): the app's own secretRef, the secretRef of another app of
//     the namespace, or any Secret holding the same password, token or key.
//
// Both are checked before anything is written (checkInputs): only Opaque and
// kubernetes.io/basic-auth Secrets holding one Git credential shape (gitops.AuthFromSecretData)
// are used, anything else is GitSecretInvalid (a ServiceAccount token Secret is never sent as
// basic auth), and credentials are never sent over plain http:// unless
// --app-allow-insecure-git-http is set (GitInsecureTransport).

var (
	// errGitSecretInvalid: the Secret is not a Git credential; terminal (the Secret watch
	// brings the app back).
	errGitSecretInvalid = errors.New("not a Git credentials Secret")
	// errGitInsecureTransport: credentials over plain http://.
	errGitInsecureTransport = errors.New("credentials over plain http://")
	// errFluxSecretRefused: the Flux credentials are credentials the operator pushes with.
	errFluxSecretRefused = errors.New("the Flux credentials can push")
	// errGitPathNotAllowed: spec.git.path is reserved or outside the apps prefix.
	errGitPathNotAllowed = errors.New("folder not allowed")
)

// gitSecretTypes are the Secret types a Git credential may have. The keys decide the shape
// (gitops.AuthFromSecretData); kubernetes.io/basic-auth has exactly username and password.
var gitSecretTypes = []corev1.SecretType{corev1.SecretTypeOpaque, corev1.SecretTypeBasicAuth}

// gitCredentials are an app's credentials Secrets, read once per pass.
type gitCredentials struct {
	read bool
	// push is the data of spec.git.secretRef (nil: anonymous).
	push map[string][]byte
	// flux is the data of spec.git.fluxSecretRef (nil: Flux fetches anonymously).
	flux map[string][]byte
}

// credentials reads and checks the app's credentials Secrets once per pass.
func (r *Reconciler) credentials(ctx context.Context, s *scope) (*gitCredentials, error) {
	if s.creds.read {
		return &s.creds, nil
	}
	push, err := r.readGitSecret(ctx, s.app, s.app.Spec.Git.SecretRef)
	if err != nil {
		return nil, err
	}
	flux, err := r.readGitSecret(ctx, s.app, s.app.Spec.Git.FluxSecretRef)
	if err != nil {
		return nil, err
	}
	s.creds = gitCredentials{read: true, push: push, flux: flux}
	return &s.creds, nil
}

// readGitSecret reads the Secret ref names in the app's namespace and checks its type; nil data
// without a ref.
func (r *Reconciler) readGitSecret(ctx context.Context, app *kubeoperav1alpha1.KubeOperaApp, ref *kubeoperav1alpha1.LocalSecretReference) (map[string][]byte, error) {
	if ref == nil || ref.Name == "" {
		return nil, nil
	}
	key := types.NamespacedName{Namespace: app.Namespace, Name: ref.Name}
	secret, err := r.readSecret(ctx, key)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %q in namespace %q", errGitSecretNotFound, key.Name, key.Namespace)
		}
		return nil, fmt.Errorf("get Git credentials Secret: %w", err)
	}
	t := secret.Type
	if t == "" {
		t = corev1.SecretTypeOpaque
	}
	ok := false
	for _, allowed := range gitSecretTypes {
		ok = ok || t == allowed
	}
	if !ok {
		return nil, fmt.Errorf("%w: Secret %q is of type %q: only %s and %s Secrets hold Git credentials",
			errGitSecretInvalid, key.Name, t, corev1.SecretTypeOpaque, corev1.SecretTypeBasicAuth)
	}
	if secret.Data == nil {
		return map[string][]byte{}, nil
	}
	return secret.Data, nil
}

// readSecret returns the type and data of a Secret an app names (its Git credentials, its
// registry pull Secret): kept from an earlier pass while the metadata cache shows the same UID and
// resourceVersion, read from the API server otherwise (secretdata.go).
func (r *Reconciler) readSecret(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error) {
	meta := secretMetadata(key)
	switch err := r.Get(ctx, key, meta); {
	case err == nil:
		if e, ok := r.secretData.get(key, meta.UID, meta.ResourceVersion); ok {
			return &corev1.Secret{Type: e.secretType, Data: e.data}, nil
		}
	case apierrors.IsNotFound(err):
		r.secretData.forget(key)
	}
	secret := &corev1.Secret{}
	if err := r.apiReader.Get(ctx, key, secret); err != nil {
		return nil, err
	}
	r.secretData.put(secret)
	return secret, nil
}

// gitAuth turns credentials data into the auth for repoURL, refusing credentials over plain
// http:// unless allowed. what names the Secret's role in messages.
func (r *Reconciler) gitAuth(repoURL string, data map[string][]byte, what string) (gitops.Auth, error) {
	if data == nil {
		return gitops.Auth{}, nil
	}
	auth, err := gitops.AuthFromSecretData(repoURL, data)
	if err != nil {
		return gitops.Auth{}, fmt.Errorf("%s: %w", what, err)
	}
	if u, perr := url.Parse(repoURL); perr == nil && u.Scheme == "http" && !auth.Anonymous() && !r.Options.AllowInsecureGitHTTP {
		return gitops.Auth{}, fmt.Errorf("%w: %s would be sent unencrypted to %s; use https:// or ssh:// (or start the operator with --app-allow-insecure-git-http)",
			errGitInsecureTransport, what, u.Host)
	}
	return auth, nil
}

// checkGitInputs checks, before anything is written, the app's folder and both credentials
// Secrets; see the comment at the top of this file.
func (r *Reconciler) checkGitInputs(ctx context.Context, s *scope) error {
	const cond = kubeoperav1alpha1.ConditionManifestsCommitted
	if err := r.checkGitPath(render.Path(s.app)); err != nil {
		return gitError(cond, err)
	}
	creds, err := r.credentials(ctx, s)
	if err != nil {
		return gitError(cond, err)
	}
	gitURL := s.app.Spec.Git.URL
	pushAuth, err := r.gitAuth(gitURL, creds.push, "spec.git.secretRef")
	if err != nil {
		return gitError(cond, err)
	}
	if s.app.Spec.Git.FluxSecretRef == nil {
		return nil
	}
	const fluxCond = kubeoperav1alpha1.ConditionFluxConfigured
	fluxAuth, err := r.gitAuth(gitURL, creds.flux, "spec.git.fluxSecretRef")
	if err != nil {
		return gitError(fluxCond, err)
	}
	name := s.app.Spec.Git.FluxSecretRef.Name
	switch pushers, err := r.pushSecretUsers(ctx, s.app.Namespace, name); {
	case err != nil:
		return err
	case s.app.Spec.Git.SecretRef != nil && s.app.Spec.Git.SecretRef.Name == name:
		return gitError(fluxCond, fmt.Errorf("%w: Secret %q is also spec.git.secretRef, the credentials the operator pushes with; "+
			"give Flux a read-only credential (a deploy key or read-only token)", errFluxSecretRefused, name))
	case len(pushers) > 0:
		return gitError(fluxCond, fmt.Errorf("%w: Secret %q is the spec.git.secretRef of app %s, credentials the operator pushes with; "+
			"give Flux a read-only credential (a deploy key or read-only token)", errFluxSecretRefused, name, pushers[0]))
	case !pushAuth.Anonymous() && fluxAuth.SharesSecretWith(pushAuth):
		return gitError(fluxCond, fmt.Errorf("%w: Secret %q holds the same credential as spec.git.secretRef, which the operator pushes with; "+
			"give Flux a read-only credential (a deploy key or read-only token)", errFluxSecretRefused, name))
	}
	return nil
}

// pushSecretUsers are the apps of namespace ns whose spec.git.secretRef is Secret name.
func (r *Reconciler) pushSecretUsers(ctx context.Context, ns, name string) ([]string, error) {
	list := &kubeoperav1alpha1.KubeOperaAppList{}
	if err := r.List(ctx, list, client.InNamespace(ns), client.MatchingFields{indexGitSecretRef: name}, readOnlyList); err != nil {
		return nil, fmt.Errorf("list the apps that push with Secret %q: %w", name, err)
	}
	var out []string
	for i := range list.Items {
		out = append(out, list.Items[i].Name)
	}
	return out, nil
}

// checkGitPath refuses a folder that is reserved or outside the apps prefix
// (--app-git-path-prefix): the repository root, a dot-folder (.github, .flux), or anything
// not strictly inside the prefix (a Flux bootstrap path such as clusters/prod).
func (r *Reconciler) checkGitPath(p string) error {
	prefix := strings.Trim(r.Options.GitPathPrefix, "/")
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("%w: the repository root is reserved", errGitPathNotAllowed)
	case path.Clean(p) != p || path.IsAbs(p):
		return fmt.Errorf("%w: %q is not a clean relative path", errGitPathNotAllowed, p)
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return fmt.Errorf("%w: %q is in the dot-folder %q, reserved for the repository's tooling", errGitPathNotAllowed, p, seg)
		}
	}
	if !strings.HasPrefix(p, prefix+"/") {
		return fmt.Errorf("%w: %q is not inside the apps prefix %q (--app-git-path-prefix)", errGitPathNotAllowed, p, prefix+"/")
	}
	return nil
}
