package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
)

// prepareVCluster creates the app namespace directly in the vCluster (not through Git: Flux's
// Kustomization targets it, and a Namespace in a pruned path could be deleted by Flux) and copies
// the registry pull Secret (read and checked by checkRegistrySecret) into it.
func (r *Reconciler) prepareVCluster(ctx context.Context, s *scope) error {
	if !s.namespaceExists {
		if err := s.vc.Create(ctx, render.AppNamespace(s.app)); err != nil && !apierrors.IsAlreadyExists(err) {
			return vclusterError(kubeoperav1alpha1.ConditionTenantResolved, "create app namespace", err)
		}
	}
	want := ""
	if s.registrySecret != nil {
		want = s.registrySecret.Name
		if err := syncSecret(ctx, s.vc, render.RegistrySecret(s.app, s.registrySecret)); err != nil {
			return vclusterError(kubeoperav1alpha1.ConditionTenantResolved, "copy registry Secret", err)
		}
	}
	// A copy the app no longer references goes (unless another app of the namespace uses it).
	if old := s.app.Status.RegistrySecret; old != "" && old != want {
		if err := r.deleteRegistryCopy(ctx, s, s.vc, old); err != nil {
			return err
		}
	}
	s.app.Status.RegistrySecret = want
	return nil
}

// checkInputs checks, before anything is written, the spec (render.Validate, the reserved
// namespaces, the Ingress allow-lists) and what the pass needs from the host and the vCluster: the registry pull Secret (checkRegistrySecret) and the app namespace, which also
// proves the vCluster answers. A bad input found here (a refused Secret, a Tenant whose
// kubeconfig points nowhere) leaves nothing in Git or in the vCluster.
func (r *Reconciler) checkInputs(ctx context.Context, s *scope) error {
	// A spec admitted whose Deployment the API server would refuse: nothing is written (not
	// even the placement), and nothing a retry can fix (the app's change brings it back).
	if err := render.Validate(s.app); err != nil {
		return outcome.Stop(kubeoperav1alpha1.ReasonInvalidSpec, err).On(kubeoperav1alpha1.ConditionManifestsCommitted)
	}
	files, err := render.Manifests(s.app)
	if err != nil {
		return outcome.Stop(kubeoperav1alpha1.ReasonGitFailed, fmt.Errorf("render manifests: %w", err)).On(kubeoperav1alpha1.ConditionManifestsCommitted)
	}
	if err := checkFolderSize(files, r.Options.MaxAppFolderSize); err != nil {
		return outcome.Stop(kubeoperav1alpha1.ReasonManifestsTooLarge, err).On(kubeoperav1alpha1.ConditionManifestsCommitted)
	}
	s.files = files
	if err := checkNamespaces(s.app); err != nil {
		return outcome.Stop(kubeoperav1alpha1.ReasonNamespaceReserved, err).On(kubeoperav1alpha1.ConditionReady)
	}
	if err := r.checkIngress(s.app); err != nil {
		return ingressError(err)
	}
	if err := r.checkGitInputs(ctx, s); err != nil {
		return err
	}
	if err := r.checkRegistrySecret(ctx, s); err != nil {
		return err
	}
	ns := render.AppNamespace(s.app)
	err = s.vc.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
	switch {
	case err == nil:
		s.namespaceExists = true
	case apierrors.IsNotFound(err):
		s.namespaceExists = false
	default:
		return vclusterError(kubeoperav1alpha1.ConditionTenantResolved, "read app namespace", fmt.Errorf("get namespace %s: %w", ns.Name, err))
	}
	return nil
}

// checkFolderSize refuses rendered manifests larger together than limit bytes (no limit when it
// is not positive). Every app of a repository shares the repository's size limit
// (--app-max-git-inflated-size), so one app's share is bounded: a tenant's large values make
// its own app ManifestsTooLarge, never its neighbours' RepositoryTooLarge.
func checkFolderSize(files map[string][]byte, limit int64) error {
	var total int64
	for _, b := range files {
		total += int64(len(b))
	}
	if limit > 0 && total > limit {
		return fmt.Errorf("the rendered manifests are %d bytes, more than the %d bytes one app may write (--app-max-folder-size): "+
			"shorten spec.app.env, command or args, or move large values into a ConfigMap or Secret the app references", total, limit)
	}
	return nil
}

// checkRegistrySecret reads the pull Secret spec.registry.secretRef names, before anything is
// written to Git or the vCluster: a missing or refused Secret leaves no partial write. Only image
// pull Secrets cross into the vCluster: any other type (a kubeconfig, database credentials, a TLS
// key) is refused and never used beyond its type.
func (r *Reconciler) checkRegistrySecret(ctx context.Context, s *scope) error {
	if s.app.Spec.Registry == nil || s.app.Spec.Registry.SecretRef.Name == "" {
		return nil
	}
	name := s.app.Spec.Registry.SecretRef.Name
	key := types.NamespacedName{Namespace: s.app.Namespace, Name: name}
	hostSecret, err := r.readSecret(ctx, key)
	if err != nil {
		if apierrors.IsNotFound(err) {
			// Reported on Ready only: no step condition covers the pull Secret. The Secret
			// watch brings the app back when it appears; the backoff is a safety net.
			return outcome.Retry(kubeoperav1alpha1.ReasonRegistrySecretNotFound,
				fmt.Errorf("registry Secret %q not found in namespace %q", key.Name, key.Namespace)).On(kubeoperav1alpha1.ConditionReady)
		}
		return fmt.Errorf("get registry Secret: %w", err)
	}
	if t := hostSecret.Type; t != corev1.SecretTypeDockerConfigJson && t != corev1.SecretTypeDockercfg {
		// The Secret watch brings the app back when the Secret is replaced.
		return outcome.Stop(kubeoperav1alpha1.ReasonRegistrySecretInvalid,
			fmt.Errorf("registry Secret %q is of type %q: only %s and %s Secrets are copied into the vCluster",
				key.Name, t, corev1.SecretTypeDockerConfigJson, corev1.SecretTypeDockercfg)).On(kubeoperav1alpha1.ConditionReady)
	}
	s.registrySecret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: hostSecret.Type, Data: hostSecret.Data}
	return nil
}

// reservedFluxNamespace is the namespace of Flux's own installation, never an app namespace
// (whatever the app's spec.flux.namespace).
const reservedFluxNamespace = "flux-system"

// checkNamespaces refuses an app namespace that belongs to the vCluster's system (kube-*,
// default, whose Service kubernetes every pod of the vCluster uses to reach its API server) or to
// Flux (flux-system, the app's Flux namespace), and a Flux namespace in kube-*: the operator would
// write the app's Role, RoleBinding and pull Secret there, and Flux would apply the app into it.
func checkNamespaces(app *kubeoperav1alpha1.KubeOperaApp) error {
	target, flux := render.TargetNamespace(app), render.FluxNamespace(app)
	switch {
	case strings.HasPrefix(target, "kube-"), target == metav1.NamespaceDefault, target == reservedFluxNamespace, target == flux:
		what := "spec.targetNamespace"
		if app.Spec.TargetNamespace == "" {
			what = "the app namespace (the app's name, spec.targetNamespace is empty)"
		}
		return fmt.Errorf("%s %q is reserved: kube-*, default, %s and the Flux namespace (spec.flux.namespace %q) are never an app's namespace",
			what, target, reservedFluxNamespace, flux)
	case strings.HasPrefix(flux, "kube-"):
		return fmt.Errorf("spec.flux.namespace %q is reserved: kube-* namespaces belong to the vCluster's system", flux)
	}
	return nil
}

// notOwnedError: an object the operator would write exists in the vCluster without the
// operator's managed-by label. It is the tenant's: never overwritten, never deleted.
type notOwnedError struct {
	kind string
	key  client.ObjectKey
}

func (e *notOwnedError) Error() string {
	return fmt.Sprintf("%s %s exists without the label %s=%s: it is not the operator's, and is neither overwritten nor deleted; rename it or remove it to let the app use the name",
		e.kind, e.key, render.LabelManagedBy, render.ManagedBy)
}

func notOwned(obj client.Object) error {
	return &notOwnedError{kind: scheme.KindOf(obj), key: client.ObjectKeyFromObject(obj)}
}

func isNotOwned(err error) bool {
	var e *notOwnedError
	return errors.As(err, &e)
}

// managed reports whether obj carries the operator's managed-by label: the operator created it
// (or a tenant administrator handed it over by adding the label).
func managed(obj client.Object) bool {
	return obj.GetLabels()[render.LabelManagedBy] == render.ManagedBy
}

// vclusterError turns a failed vCluster request into a step error: VClusterObjectNotOwned for
// an object of the tenant's in the way, VClusterUnreachable when the vCluster did not answer,
// VClusterRequestFailed when it refused the request.
func vclusterError(condition, what string, err error) error {
	err = fmt.Errorf("%s in the vCluster: %w", what, err)
	if isNotOwned(err) {
		return outcome.Retry(kubeoperav1alpha1.ReasonVClusterObjectNotOwned, err).On(condition)
	}
	if unreachable(err) {
		return outcome.Retry(kubeoperav1alpha1.ReasonVClusterUnreachable, err).On(condition)
	}
	return outcome.Retry(kubeoperav1alpha1.ReasonVClusterRequestFailed, err).On(condition)
}

// ensureNamespace creates ns unless it exists. An existing namespace is left as it is.
func ensureNamespace(ctx context.Context, c client.Client, ns *corev1.Namespace) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %s: %w", ns.Name, err)
	}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns.Name, err)
	}
	return nil
}

// syncSecret makes the vCluster Secret equal to want (type, data, labels): created when
// missing, updated when different (recreated when the immutable type differs), untouched when
// equal. A Secret of that name without the operator's label is the tenant's: it is left as it is
// and syncSecret fails with a notOwnedError.
func syncSecret(ctx context.Context, c client.Client, want *corev1.Secret) error {
	got := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		if err := c.Create(ctx, want.DeepCopy()); err != nil {
			return fmt.Errorf("create Secret %s: %w", client.ObjectKeyFromObject(want), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("get Secret %s: %w", client.ObjectKeyFromObject(want), err)
	case !managed(got):
		return notOwned(want)
	}
	if got.Type != want.Type {
		if err := c.Delete(ctx, got, client.Preconditions{UID: &got.UID}); ignoreGone(err) != nil {
			return fmt.Errorf("replace Secret %s: %w", client.ObjectKeyFromObject(want), err)
		}
		if err := c.Create(ctx, want.DeepCopy()); err != nil {
			return fmt.Errorf("create Secret %s: %w", client.ObjectKeyFromObject(want), err)
		}
		return nil
	}
	if secretDataEqual(got.Data, want.Data) && labels.SelectorFromSet(want.Labels).Matches(labels.Set(got.Labels)) {
		return nil
	}
	got.Data = want.Data
	got.StringData = nil
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	maps.Copy(got.Labels, want.Labels)
	if err := c.Update(ctx, got); err != nil {
		return fmt.Errorf("update Secret %s: %w", client.ObjectKeyFromObject(want), err)
	}
	return nil
}

func secretDataEqual(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// deleteIfManaged deletes obj when it exists and carries the operator's managed-by label.
func deleteIfManaged(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return ignoreGone(err)
	}
	if !managed(obj) {
		return nil
	}
	uid := obj.GetUID()
	return ignoreGone(c.Delete(ctx, obj, client.Preconditions{UID: &uid}))
}

// unreachable reports whether err from a vCluster request means the vCluster did not answer
// (connection refused, timeout, DNS, TLS), as opposed to an answer with an error status.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	return !isAPIError(err) && !apimeta.IsNoMatchError(err)
}

// isAPIError reports whether err carries an API server's answer (a Status).
func isAPIError(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

// ignoreGone treats NotFound, and the kind not being served at all (Flux not installed), as
// success for a delete.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
		return nil
	}
	return err
}
