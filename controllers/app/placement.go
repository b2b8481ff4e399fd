package app

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// The placement of an app (docs/app-controller.md, "Placement"): the Tenant it was placed in and
// the Git folder it writes, with the push Secret it writes there. It is recorded on the object in
// the AnnotationPlacement annotation before the first write of the first pass that gets that far,
// and mirrored in status (tenant, repository, branch, path). The annotation is the record: it is
// metadata, so it survives what the status does not (a backup restored without the status
// subresource, a status wiped by hand), and a pass that finds the status without a placement
// restores it from the annotation. A move re-records the placement once the old folder is
// removed (or left for good), so during a move the record names the old folder and its
// credentials, and deletion cleans both that and the spec's folder.

// location is where an app's folder is: repository, branch and path, and the name of the push
// Secret (spec.git.secretRef) to write there with ("" means anonymous).
type location struct{ url, branch, path, secret string }

func (l location) sameBranch(o location) bool { return l.url == o.url && l.branch == o.branch }

// sameFolder: l and o are the same folder (whatever the credentials).
func (l location) sameFolder(o location) bool { return l.sameBranch(o) && l.path == o.path }

// folder names the folder for the record of pushes (pushes.go).
func (l location) folder() string { return l.url + "\x00" + l.branch + "\x00" + l.path }

// specLocation is the folder the current spec asks for.
func (r *Reconciler) specLocation(app *kubeoperav1alpha1.KubeOperaApp) location {
	return location{url: app.Spec.Git.URL, branch: render.Branch(app), path: render.Path(app, r.Options.GitPathPrefix), secret: pushSecretName(app)}
}

// pushSecretName is the name of the Secret the spec pushes with, "" when anonymous.
func pushSecretName(app *kubeoperav1alpha1.KubeOperaApp) string {
	if app.Spec.Git.SecretRef == nil {
		return ""
	}
	return app.Spec.Git.SecretRef.Name
}

// placementRecord is the JSON value of AnnotationPlacement.
type placementRecord struct {
	Tenant     string `json:"tenant,omitempty"`
	URL        string `json:"url"`
	Branch     string `json:"branch"`
	Path       string `json:"path"`
	SecretName string `json:"secretName,omitempty"`
}

func (p placementRecord) location() location {
	return location{url: p.URL, branch: p.Branch, path: p.Path, secret: p.SecretName}
}

// annotatedPlacement reads AnnotationPlacement; false when absent or not a placement (only the
// operator writes it; a damaged one is rewritten from the status by the next placement).
func annotatedPlacement(app *kubeoperav1alpha1.KubeOperaApp) (placementRecord, bool) {
	raw, ok := app.Annotations[kubeoperav1alpha1.AnnotationPlacement]
	if !ok {
		return placementRecord{}, false
	}
	var p placementRecord
	if err := json.Unmarshal([]byte(raw), &p); err != nil || p.Path == "" || p.URL == "" {
		return placementRecord{}, false
	}
	return p, true
}

// recordedLocation is the folder the app was last placed at (path "" when never): the
// annotation's, or, for an app placed by a version that recorded it in status only, the
// status's with the spec's push Secret (status written before repository and branch were
// recorded means the spec's).
func recordedLocation(app *kubeoperav1alpha1.KubeOperaApp) location {
	if p, ok := annotatedPlacement(app); ok {
		return p.location()
	}
	l := location{url: app.Status.Repository, branch: app.Status.Branch, path: app.Status.Path, secret: pushSecretName(app)}
	if l.url == "" {
		l.url = app.Spec.Git.URL
	}
	if l.branch == "" {
		l.branch = render.Branch(app)
	}
	return l
}

// restorePlacement mirrors the annotated placement into the status: a status that lost it (or
// holds an older one: the annotation is written first) gets it back, and is written by the
// pass's status patch. placed reports whether the app carries a placement.
func restorePlacement(app *kubeoperav1alpha1.KubeOperaApp) (placed bool) {
	p, ok := annotatedPlacement(app)
	if !ok {
		return false
	}
	st := &app.Status
	st.Repository, st.Branch, st.Path = p.URL, p.Branch, p.Path
	if st.Tenant == nil && p.Tenant != "" {
		st.Tenant = &kubeoperav1alpha1.TenantReference{Namespace: app.Namespace, Name: p.Tenant}
	}
	return true
}

// recordPlacement persists the app's placement (Tenant and Git folder) the first time it is
// placed, before anything is written to the vCluster or Git: the annotation first, with the
// finalizer in the same patch (writePlacement), then the status. A pass that dies after its side
// effects and before the deferred status patch therefore always leaves a placement deletion can
// clean up; and the status is written at once, not with the pass's status patch, because other
// apps' passes read it from the cache (the Tenant index that maps vCluster events to apps, the
// holder of a shared repository, the users of a copied pull Secret) and the pass may end
// without a status patch (a push pending). Later moves keep the old placement recorded until its
// folder is removed (finishMove), and deletion also looks at the folder of the current spec.
func (r *Reconciler) recordPlacement(ctx context.Context, s *scope) error {
	// The push Secret stays readable until the app's folders are removed (secretguard.go).
	if err := r.holdPushSecret(ctx, s); err != nil {
		return err
	}
	st := &s.app.Status
	loc := recordedLocation(s.app)
	if st.Path == "" {
		loc = r.specLocation(s.app)
		st.Path, st.Repository, st.Branch = loc.path, loc.url, loc.branch
	}
	if err := r.writePlacement(ctx, s, loc); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(st.Tenant, s.orig.Status.Tenant) && st.Path == s.orig.Status.Path &&
		st.Repository == s.orig.Status.Repository && st.Branch == s.orig.Status.Branch {
		return nil
	}
	want := s.orig.DeepCopy()
	want.Status.Tenant, want.Status.Path, want.Status.Repository, want.Status.Branch = st.Tenant, st.Path, st.Repository, st.Branch
	if err := r.Status().Patch(ctx, want, client.MergeFrom(s.orig)); err != nil {
		return fmt.Errorf("record placement: %w", err)
	}
	s.versions.Wrote(want)
	// The placement is persisted: the deferred patch diffs against it.
	s.orig.Status.Tenant, s.orig.Status.Path, s.orig.Status.Repository, s.orig.Status.Branch = want.Status.Tenant, st.Path, st.Repository, st.Branch
	s.orig.ResourceVersion = want.ResourceVersion
	return nil
}

// placeAt records loc as the app's placement once its folder is written and the old one (if
// any) removed: the annotation at once, the status with the pass's status patch.
func (r *Reconciler) placeAt(ctx context.Context, s *scope, loc location) error {
	if err := r.writePlacement(ctx, s, loc); err != nil {
		return err
	}
	s.app.Status.Path, s.app.Status.Repository, s.app.Status.Branch = loc.path, loc.url, loc.branch
	return nil
}

// writePlacement patches AnnotationPlacement to loc (with the pinned Tenant), and adds the app's
// finalizer, unless the app holds both already: one patch, so a new app's first pass writes its
// metadata once. A patch that adds the finalizer carries the resourceVersion (a merge patch
// replaces the whole finalizer list: another's finalizer added meanwhile must not be lost). The
// patch goes through a copy: the server's answer carries the stored status, which must not
// replace the pass's.
func (r *Reconciler) writePlacement(ctx context.Context, s *scope, loc location) error {
	rec := placementRecord{URL: loc.url, Branch: loc.branch, Path: loc.path, SecretName: loc.secret}
	if s.app.Status.Tenant != nil {
		rec.Tenant = s.app.Status.Tenant.Name
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("record placement: %w", err)
	}
	addFinalizer := needsFinalizer(s.app)
	if s.app.Annotations[kubeoperav1alpha1.AnnotationPlacement] == string(raw) && !addFinalizer {
		return nil
	}
	obj := s.app.DeepCopy()
	patch := client.MergeFrom(obj.DeepCopy())
	if addFinalizer {
		patch = client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(obj, kubeoperav1alpha1.Finalizer)
	}
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[kubeoperav1alpha1.AnnotationPlacement] = string(raw)
	if err := r.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("record placement: %w", err)
	}
	s.wroteMetadata(obj)
	return nil
}

// wroteMetadata takes the metadata the server answered a patch of the app with (annotations,
// finalizers, resourceVersion) into the pass's app and into the base of its status patch.
func (s *scope) wroteMetadata(obj *kubeoperav1alpha1.KubeOperaApp) {
	s.versions.Wrote(obj)
	s.app.Annotations, s.app.Finalizers, s.app.ResourceVersion = obj.Annotations, obj.Finalizers, obj.ResourceVersion
	s.orig.Annotations, s.orig.Finalizers, s.orig.ResourceVersion = maps.Clone(obj.Annotations), slices.Clone(obj.Finalizers), obj.ResourceVersion
}

// userAnnotationChanged passes app updates that change an annotation other than the operator's
// own placement record: an annotation is a manual retry or an escape (abandon, skip, create a
// branch), while recording the placement must not cost the app another pass.
var userAnnotationChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld == nil || e.ObjectNew == nil {
			return false
		}
		return !maps.Equal(withoutPlacement(e.ObjectOld.GetAnnotations()), withoutPlacement(e.ObjectNew.GetAnnotations()))
	},
}

func withoutPlacement(a map[string]string) map[string]string {
	a = maps.Clone(a)
	delete(a, kubeoperav1alpha1.AnnotationPlacement)
	return a
}
