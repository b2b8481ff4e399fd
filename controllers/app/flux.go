package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/render"
	"github.com/kubeopera/kubeopera-operator/internal/scheme"
)

// configureFlux applies the app's GitRepository and Kustomization in the vCluster (server-side
// apply with the operator's field manager: nothing changes when nothing changed), plus the copy
// of the Git credentials for a private repository and the ServiceAccount, Role and RoleBinding
// the Kustomization applies as (before it, so Flux never applies without them). It keeps the
// applied Kustomization in s for observeSync. An object of one of these names that the tenant
// created (no managed-by label) is refused, never overwritten (VClusterObjectNotOwned).
func (r *Reconciler) configureFlux(ctx context.Context, s *scope) error {
	const cond = kubeoperav1alpha1.ConditionFluxConfigured
	folder := r.specLocation(s.app).path
	repo, err := render.GitRepository(s.app, folder)
	if err != nil {
		return outcome.Stop(kubeoperav1alpha1.ReasonFluxConfigFailed, err).On(cond)
	}
	ks, err := render.Kustomization(s.app, folder)
	if err != nil {
		return outcome.Stop(kubeoperav1alpha1.ReasonFluxConfigFailed, err).On(cond)
	}
	if s.app.Status.Commit != "" {
		// Ask Flux to fetch now instead of at its next interval, as `flux reconcile source git`
		// does. The value is the commit, so the request changes exactly when a new commit was
		// pushed, and an unchanged app applies an unchanged object.
		repo.Annotations = map[string]string{meta.ReconcileRequestAnnotation: s.app.Status.Commit}
	}
	if err := ensureNamespace(ctx, s.vc, render.FluxNamespaceObject(s.app)); err != nil {
		return fluxError("create the Flux namespace", err)
	}
	// Only the read-only Flux credentials enter the vCluster (checkGitInputs refused a Secret
	// the operator pushes with); without them Flux fetches anonymously, and a copy made by an
	// earlier version (of the push credentials) is deleted.
	gitSecret := render.FluxGitSecret(s.app, nil)
	if s.app.Spec.Git.FluxSecretRef != nil {
		creds, err := r.credentials(ctx, s)
		if err != nil {
			return gitError(cond, err)
		}
		if err := syncSecret(ctx, s.vc, render.FluxGitSecret(s.app, creds.flux)); err != nil {
			return fluxError("copy the Flux Git credentials", err)
		}
	} else if err := deleteIfManaged(ctx, s.vc, gitSecret); err != nil {
		return fluxError("delete the copied Git credentials", err)
	}
	if err := apply(ctx, s.vc, repo); err != nil {
		return fluxError("apply GitRepository", err)
	}
	for _, obj := range []client.Object{render.FluxServiceAccount(s.app), render.FluxRole(s.app), render.FluxRoleBinding(s.app)} {
		if err := apply(ctx, s.vc, obj); err != nil {
			return fluxError("apply the Kustomization's "+scheme.KindOf(obj), err)
		}
	}
	if err := apply(ctx, s.vc, ks); err != nil {
		return fluxError("apply Kustomization", err)
	}
	s.kustomization, s.gitRepository = ks, repo
	r.stepSucceeded(s.app, cond, fmt.Sprintf("GitRepository and Kustomization %s/%s applied", ks.Namespace, ks.Name))
	return nil
}

// apply server-side applies a typed object with the operator's field manager (forced, so a
// field another manager changed is taken back), unless the live object already holds exactly
// what this field manager applied last: the fields it owns (managedFields) are compared with
// the desired object, so an unchanged app sends no write at all, while a field another actor
// changed or removed, or one the operator stopped setting, is applied again. The Flux API has no
// generated apply configurations: the object goes through its JSON form, which holds exactly the
// fields the renderer set (empty optional fields are omitted, so the operator does not own
// them). The object is updated with the live object (or the server's answer), status included.
// A live object without the operator's managed-by label is not the operator's: it is left as it
// is and the apply fails with a notOwnedError.
func apply(ctx context.Context, c client.Client, obj client.Object) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("convert %s: %w", scheme.KindOf(obj), err)
	}
	u := &unstructured.Unstructured{Object: raw}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")

	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	switch err := c.Get(ctx, client.ObjectKeyFromObject(u), live); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case !managed(live):
		return notOwned(live)
	case ownsExactly(live, u):
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, obj); err != nil {
			return fmt.Errorf("convert the live %s: %w", scheme.KindOf(obj), err)
		}
		return nil
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Applying object", u.GetKind(), klog.KObj(u))
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(Name), client.ForceOwnership); err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("convert the applied %s: %w", scheme.KindOf(obj), err)
	}
	return nil
}

// ownsExactly reports whether the fields the operator's field manager owns in live are the
// desired object. The deduced schema (maps as structs, lists atomic) extracts the fields the
// renderer sets exactly: the lists it sets (sparseCheckout, a Role's rules, a RoleBinding's
// subjects) are atomic in the real schemas too, and an atomic struct is completed by
// fillAtomicStructs.
func ownsExactly(live, desired *unstructured.Unstructured) bool {
	owned := map[string]any{}
	if err := managedfields.ExtractInto(live, typed.DeducedParseableType, Name, &owned, ""); err != nil || len(owned) == 0 {
		return false
	}
	fillAtomicStructs(owned, live.Object, desired.Object)
	// managedFields never list the object's identity.
	if unstructured.SetNestedField(owned, live.GetName(), "metadata", "name") != nil ||
		unstructured.SetNestedField(owned, live.GetNamespace(), "metadata", "namespace") != nil {
		return false
	}
	a, errA := json.Marshal(owned)
	b, errB := json.Marshal(desired.Object)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// fillAtomicStructs completes what the deduced schema extracts of a struct the real schema
// marks atomic (a RoleBinding's roleRef): managedFields record such a struct without its fields,
// so the extraction holds null (or an empty map) where the operator owns the whole struct. Its
// value is the live one.
func fillAtomicStructs(owned, live, desired map[string]any) {
	for k, d := range desired {
		dm, ok := d.(map[string]any)
		if !ok {
			continue
		}
		o, present := owned[k]
		if !present {
			continue
		}
		lm, ok := live[k].(map[string]any)
		if !ok {
			continue
		}
		om, _ := o.(map[string]any)
		if len(om) == 0 && len(dm) > 0 {
			owned[k] = lm
			continue
		}
		fillAtomicStructs(om, lm, dm)
	}
}

// fluxError maps a failed Flux request to its reason.
func fluxError(what string, err error) error {
	const cond = kubeoperav1alpha1.ConditionFluxConfigured
	err = fmt.Errorf("%s in the vCluster: %w", what, err)
	switch {
	case isNotOwned(err):
		return outcome.Retry(kubeoperav1alpha1.ReasonVClusterObjectNotOwned, err).On(cond)
	case apimeta.IsNoMatchError(err):
		return outcome.Retry(kubeoperav1alpha1.ReasonFluxConfigFailed,
			fmt.Errorf("the Flux CRDs are not installed in the vCluster: %w", err)).On(cond)
	case unreachable(err):
		return outcome.Retry(kubeoperav1alpha1.ReasonVClusterUnreachable, err).On(cond)
	default:
		return outcome.Retry(kubeoperav1alpha1.ReasonFluxConfigFailed, err).On(cond)
	}
}

// observeSync reads the Kustomization's status, the Deployment's available replicas and the
// Ingress's address and certificate (ingress.go) back from the vCluster; setSynced decides what
// they mean.
func (r *Reconciler) observeSync(ctx context.Context, s *scope) (ctrl.Result, error) {
	available, err := availableReplicas(ctx, s)
	if err != nil {
		return r.failed(ctx, s, vclusterError(kubeoperav1alpha1.ConditionSynced, "read the Deployment", err))
	}
	exp, err := observeIngress(ctx, s)
	if err != nil {
		return r.failed(ctx, s, vclusterError(kubeoperav1alpha1.ConditionSynced, "read the Ingress", err))
	}
	revision := s.kustomization.Status.LastAppliedRevision
	holds, why, err := r.appliedHoldsFolder(ctx, s, revision)
	if errors.Is(err, gitops.ErrBranchBusy) {
		// Not decided: the pass ends and asks again once the batch holding the branch is done.
		return ctrl.Result{}, outcome.Pending(reasonBranchBusy, err)
	}
	if err != nil {
		// Rare: the applied revision is not in the Git writer's clone and fetching it failed.
		s.app.Status.AppliedRevision = revision
		r.setCondition(s.app, kubeoperav1alpha1.ConditionSynced, metav1.ConditionUnknown, kubeoperav1alpha1.ReasonGitFailed,
			fmt.Sprintf("Not verified: compare the app's folder at the applied revision %s with commit %s: %v", revision, s.head, err))
		return ctrl.Result{}, err
	}
	return r.setSynced(s, available, exp, holds, why), nil
}

// availableReplicas reads the available replicas of the app's Deployment in the vCluster (0
// while Flux has not applied it). While the Kustomization has applied nothing, no Deployment of
// the app's can exist (one of that name is someone else's): 0, without a request.
func availableReplicas(ctx context.Context, s *scope) (int32, error) {
	if s.kustomization.Status.LastAppliedRevision == "" {
		return 0, nil
	}
	d := &appsv1.Deployment{}
	err := s.vc.Get(ctx, client.ObjectKey{Namespace: render.TargetNamespace(s.app), Name: s.app.Name}, d)
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return d.Status.AvailableReplicas, nil
}

// appliedCommit extracts the commit SHA from a Flux revision "<branch>@sha1:<sha>" (or
// "refs/heads/<branch>@sha1:<sha>"); "" when the revision is of another branch or malformed.
func appliedCommit(revision, branch string) string {
	ref, digest, ok := strings.Cut(revision, "@")
	if !ok {
		return ""
	}
	if ref != branch && ref != "refs/heads/"+branch {
		return ""
	}
	algo, sha, ok := strings.Cut(digest, ":")
	if !ok || (algo != "sha1" && algo != "sha256") {
		return ""
	}
	return sha
}
