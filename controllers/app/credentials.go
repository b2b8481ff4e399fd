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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// The Git credentials of an app (docs/app-controller.md#git-credentials).
//
//   - spec.git.secretRef is what the operator pushes with. It never leaves the host cluster.
//   - spec.git.fluxSecretRef is what Flux in the vCluster fetches with: copied there, where the
//     tenant's administrators can read it, so it must be read-only (a deploy key or read-only
//     token of this tenant). Empty: Flux fetches anonymously.
//
// No credential the operator pushes with may reach a vCluster, whoever names it:
//   - a Flux Secret must carry LabelFluxCredentials=true, an explicit declaration that it may be
//     copied to a tenant; a push Secret must not carry it (PushSecretExposed);
//   - a Flux Secret is refused (FluxSecretRefused) when it is the app's own push Secret, the push
//     Secret of another app of the namespace, or holds the same password, token or key as the
//     push Secret of any app that writes to the same repository (spec.git.url), in any namespace;
//   - a push Secret is refused (PushSecretExposed) when it holds the same credential as the Flux
//     Secret of any app of that repository;
//   - the pass that refuses an app's Flux Secret deletes the app's copy in the vCluster, so a
//     Secret that later became a push credential does not stay copied.
//
// All of it is checked before anything is written to Git (checkGitInputs): only Opaque and
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
	// errPushSecretExposed: the push credentials are declared or found copyable into vClusters.
	errPushSecretExposed = errors.New("the push credentials may be copied to a tenant")
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
	// pushCopyable: spec.git.secretRef carries LabelFluxCredentials.
	pushCopyable bool
	// flux is the data of spec.git.fluxSecretRef (nil: Flux fetches anonymously).
	flux map[string][]byte
	// fluxCopyable: spec.git.fluxSecretRef carries LabelFluxCredentials.
	fluxCopyable bool
}

// credentials reads and checks the app's credentials Secrets once per pass.
func (r *Reconciler) credentials(ctx context.Context, s *scope) (*gitCredentials, error) {
	if s.creds.read {
		return &s.creds, nil
	}
	push, err := r.readGitSecret(ctx, s.app.Namespace, s.app.Spec.Git.SecretRef)
	if err != nil {
		return nil, err
	}
	flux, err := r.readGitSecret(ctx, s.app.Namespace, s.app.Spec.Git.FluxSecretRef)
	if err != nil {
		return nil, err
	}
	s.creds = gitCredentials{read: true, push: push.Data, pushCopyable: copyable(push), flux: flux.Data, fluxCopyable: copyable(flux)}
	return &s.creds, nil
}

// copyable reports whether a Secret is declared copyable into vClusters (LabelFluxCredentials).
func copyable(secret *corev1.Secret) bool {
	return secret.Labels[kubeoperav1alpha1.LabelFluxCredentials] == "true"
}

// readGitSecret reads the Secret ref names in namespace ns and checks its type; a Secret with
// nil data and no labels without a ref.
func (r *Reconciler) readGitSecret(ctx context.Context, ns string, ref *kubeoperav1alpha1.LocalSecretReference) (*corev1.Secret, error) {
	if ref == nil || ref.Name == "" {
		return &corev1.Secret{}, nil
	}
	key := types.NamespacedName{Namespace: ns, Name: ref.Name}
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
	out := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: secret.Labels}, Type: t, Data: secret.Data}
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	return out, nil
}

// readSecret returns the type and data of a Secret an app names (its Git credentials, its
// registry pull Secret): kept from an earlier pass while the metadata cache shows the same UID and
// resourceVersion, read from the API server otherwise (secretdata.go).
func (r *Reconciler) readSecret(ctx context.Context, key types.NamespacedName) (*corev1.Secret, error) {
	meta := secretMetadata(key)
	switch err := r.Get(ctx, key, meta); {
	case err == nil:
		if e, ok := r.secretData.get(key, meta.UID, meta.ResourceVersion); ok {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Labels: meta.Labels}, Type: e.secretType, Data: e.data}, nil
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
	if err := r.checkGitPath(render.Path(s.app, r.Options.GitPathPrefix), s.app.Namespace); err != nil {
		return gitError(cond, err)
	}
	if err := r.checkRepositoryHolder(ctx, s.app); err != nil {
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
	if creds.pushCopyable {
		return gitError(cond, fmt.Errorf("%w: Secret %q is labelled %s=true, declared copyable into vClusters; "+
			"push with a credential that is never given to Flux", errPushSecretExposed, s.app.Spec.Git.SecretRef.Name, kubeoperav1alpha1.LabelFluxCredentials))
	}
	if pushAuth.Anonymous() && s.app.Spec.Git.FluxSecretRef == nil {
		return nil // no credential of this app to compare with the repository's
	}
	repo, err := r.repositoryCredentials(ctx, s.app)
	if err != nil {
		return err
	}
	if !pushAuth.Anonymous() {
		if other := repo.fluxSharing(pushAuth); other != "" {
			return gitError(cond, fmt.Errorf("%w: Secret %q holds the same credential as the Flux Secret of app %s, which is copied into a vCluster; "+
				"rotate the credential and give Flux a read-only one", errPushSecretExposed, s.app.Spec.Git.SecretRef.Name, other))
		}
	}
	if s.app.Spec.Git.FluxSecretRef == nil {
		return nil
	}
	if err := r.checkFluxSecret(ctx, s, creds, pushAuth, repo); err != nil {
		// The refused Secret leaves the vCluster in the pass that refuses it (a copy made while
		// it was still acceptable). Without a vCluster client there is no copy to reach yet.
		if s.vc != nil {
			if derr := deleteIfManaged(ctx, s.vc, render.FluxGitSecret(s.app, nil)); derr != nil {
				return fluxError("delete the refused copy of the Flux Git credentials", derr)
			}
		}
		return err
	}
	return nil
}

// checkFluxSecret refuses a Flux Secret that is not declared copyable or that the operator
// pushes with (see the comment at the top of this file).
func (r *Reconciler) checkFluxSecret(ctx context.Context, s *scope, creds *gitCredentials, pushAuth gitops.Auth, repo repositoryCredentials) error {
	const fluxCond = kubeoperav1alpha1.ConditionFluxConfigured
	name := s.app.Spec.Git.FluxSecretRef.Name
	const advice = "give Flux a read-only credential (a deploy key or read-only token)"
	switch pushers, err := r.pushSecretUsers(ctx, s.app.Namespace, name); {
	case err != nil:
		return err
	case s.app.Spec.Git.SecretRef != nil && s.app.Spec.Git.SecretRef.Name == name:
		return gitError(fluxCond, fmt.Errorf("%w: Secret %q is also spec.git.secretRef, the credentials the operator pushes with; %s", errFluxSecretRefused, name, advice))
	case len(pushers) > 0:
		return gitError(fluxCond, fmt.Errorf("%w: Secret %q is the spec.git.secretRef of app %s, credentials the operator pushes with; %s", errFluxSecretRefused, name, pushers[0], advice))
	case !creds.fluxCopyable:
		return gitError(fluxCond, fmt.Errorf("%w: Secret %q is not labelled %s=true: only a Secret declared read-only and copyable is given to Flux in the vCluster",
			errFluxSecretRefused, name, kubeoperav1alpha1.LabelFluxCredentials))
	}
	fluxAuth, err := r.gitAuth(s.app.Spec.Git.URL, creds.flux, "spec.git.fluxSecretRef")
	if err != nil {
		return gitError(fluxCond, err)
	}
	if !pushAuth.Anonymous() && fluxAuth.SharesSecretWith(pushAuth) {
		return gitError(fluxCond, fmt.Errorf("%w: Secret %q holds the same credential as spec.git.secretRef, which the operator pushes with; %s", errFluxSecretRefused, name, advice))
	}
	if other := repo.pushSharing(fluxAuth); other != "" {
		return gitError(fluxCond, fmt.Errorf("%w: Secret %q holds the same credential as the push Secret of app %s, which writes to the same repository; %s",
			errFluxSecretRefused, name, other, advice))
	}
	return nil
}

// repositoryCredentials are the credentials of the other apps that write to one repository.
type repositoryCredentials struct {
	push, flux []appAuth
}

// appAuth is one app's credential: the app (namespace/name) and the auth its Secret gives.
type appAuth struct {
	app  string
	auth gitops.Auth
}

// pushSharing names an app whose push credential shares a secret value with auth ("" if none).
func (c repositoryCredentials) pushSharing(auth gitops.Auth) string { return sharing(c.push, auth) }

// fluxSharing names an app whose Flux credential shares a secret value with auth ("" if none).
func (c repositoryCredentials) fluxSharing(auth gitops.Auth) string { return sharing(c.flux, auth) }

func sharing(list []appAuth, auth gitops.Auth) string {
	for _, a := range list {
		if auth.SharesSecretWith(a.auth) {
			return a.app
		}
	}
	return ""
}

// repositoryCredentials reads the push and Flux credentials of every other app with the same
// spec.git.url, in any namespace (the apps come from the cache by index). Each Secret is read
// once, whatever roles the apps give it, and listed once per role. Only Secrets the metadata
// cache holds are read, through readSecret's data cache, so a steady pass sends no request; a
// Secret that is missing, unreadable or no Git credential is its app's to report and is skipped.
func (r *Reconciler) repositoryCredentials(ctx context.Context, app *kubeoperav1alpha1.KubeOperaApp) (repositoryCredentials, error) {
	var out repositoryCredentials
	list, err := r.appsOfRepository(ctx, app.Spec.Git.URL)
	if err != nil {
		return out, err
	}
	type credential struct {
		auth               gitops.Auth
		usable, isCopyable bool
	}
	read := map[types.NamespacedName]credential{}
	credentialOf := func(key types.NamespacedName) credential {
		if c, done := read[key]; done {
			return c
		}
		var c credential
		if err := r.Get(ctx, key, secretMetadata(key)); err == nil {
			if secret, err := r.readGitSecret(ctx, key.Namespace, &kubeoperav1alpha1.LocalSecretReference{Name: key.Name}); err == nil {
				auth, err := gitops.AuthFromSecretData(app.Spec.Git.URL, secret.Data)
				c = credential{auth: auth, usable: err == nil && !auth.Anonymous(), isCopyable: copyable(secret)}
			}
		}
		read[key] = c
		return c
	}
	// add lists the credential of ref once per role (listed), a Flux one only when declared
	// copyable: only such a Secret is ever copied into a vCluster.
	add := func(to *[]appAuth, listed map[types.NamespacedName]bool, other *kubeoperav1alpha1.KubeOperaApp,
		ref *kubeoperav1alpha1.LocalSecretReference, needCopyable bool) {
		if ref == nil || ref.Name == "" {
			return
		}
		key := types.NamespacedName{Namespace: other.Namespace, Name: ref.Name}
		if c := credentialOf(key); !listed[key] && c.usable && (c.isCopyable || !needCopyable) {
			listed[key] = true
			*to = append(*to, appAuth{app: other.Namespace + "/" + other.Name, auth: c.auth})
		}
	}
	listedPush, listedFlux := map[types.NamespacedName]bool{}, map[types.NamespacedName]bool{}
	for i := range list.Items {
		other := &list.Items[i]
		if other.UID == app.UID {
			continue
		}
		add(&out.push, listedPush, other, other.Spec.Git.SecretRef, false)
		add(&out.flux, listedFlux, other, other.Spec.Git.FluxSecretRef, true)
	}
	return out, nil
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

// checkGitPath refuses a folder that is reserved or not the app's host namespace's to write: the
// repository root, a dot-folder (.github, .flux), anything not strictly inside the apps prefix
// (--app-git-path-prefix; a Flux bootstrap path such as clusters/prod), and anything not
// strictly inside <prefix>/<namespace>/, the folder of the app's host namespace. So an app of one
// namespace can never take, or block with a marker of its own, a folder of another namespace's,
// whatever its spec.git.path says (the way Kratix derives a destination's path from the
// destination, not from the request).
func (r *Reconciler) checkGitPath(p, namespace string) error {
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
	if own := render.NamespaceFolder(prefix, namespace) + "/"; !strings.HasPrefix(p, own) {
		return fmt.Errorf("%w: %q is not inside %q, the folder of the app's namespace %s: an app writes only in its own namespace's folder",
			errGitPathNotAllowed, p, own, namespace)
	}
	return nil
}
