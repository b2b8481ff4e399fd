package app

// What Flux applied, compared with what the app holds in Git (appliedHoldsFolder), and the
// app's revision history (status.history: recordRevision when a commit changes the app's
// folder, markApplied when Flux applied it). docs/app-controller.md, "Read-back" and
// "Revision history and rollback".

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeoperav1alpha1 "github.com/kubeopera/kubeopera-operator/api/kubeopera/v1alpha1"
	"github.com/kubeopera/kubeopera-operator/internal/gitops"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
	"github.com/kubeopera/kubeopera-operator/internal/render"
)

// appliedHoldsFolder reports whether the revision Flux applied (the Kustomization's
// lastAppliedRevision, "<branch>@sha1:<commit>") holds the app's current folder: it is the
// app's commit or this pass's head, or the folder's tree there equals its tree at this pass's
// head (other apps pushed to the branch since, or before, and left the folder as it is). The
// comparison reads the Git writer's clone (gitops.Writer.SameFolder: no fetch for a commit
// the clone holds, one bounded fetch for one it does not). why explains, for the
// RevisionNotApplied message, a revision that cannot be compared ("" otherwise); err is a
// failure to compare (the fetch failed).
func (r *Reconciler) appliedHoldsFolder(ctx context.Context, s *scope, revision string) (holds bool, why string, err error) {
	commit := appliedCommit(revision, render.Branch(s.app))
	switch {
	case commit == "":
		return false, "", nil
	case commit == s.app.Status.Commit || commit == s.head:
		return true, "", nil
	case s.head == "":
		return false, "", nil
	}
	here := r.specLocation(s.app)
	repo, err := r.gitRepo(ctx, s, here)
	if err != nil {
		return false, "", err
	}
	same, err := r.writer.SameFolder(ctx, repo, here.path, commit, s.head)
	switch {
	case errors.Is(err, gitops.ErrRevisionNotFound):
		return false, fmt.Sprintf("; %s is not among the last %d commits of the branch", shortCommit(commit), gitops.RevisionFetchDepth), nil
	case errors.Is(err, gitops.ErrInvalidChange):
		// Not a SHA-1 commit (a sha256 repository): only the exact commits above match.
		return false, "", nil
	case err != nil:
		return false, "", err
	}
	return same, "", nil
}

// kustomizationConcerns reports whether an event of the app's Kustomization obj of Tenant t is
// worth a pass of the app now. A push to a shared branch moves every Kustomization of the branch
// to the new head, and only the apps whose folder the push changed have anything to do: an event
// that finds the app Synced for its generation and commit and the Kustomization Ready asks
// whether the revision it applied holds the app's folder as the app's commit does. The Git
// writer answers from its cache or its idle clone (gitops.Writer.SameFolderKnown: no waiting, no
// network); when it cannot, the question goes to its branch's folder checks (foldercheck.go),
// which offer the app to its Tenant's pacing only if the folder changed, and the watch goes on.
// The periodic pass (ResyncInterval) still reads everything back.
func (r *Reconciler) kustomizationConcerns(ctx context.Context, t types.NamespacedName, app *kubeoperav1alpha1.KubeOperaApp, obj client.Object) bool {
	q, ok := folderQuestionOf(t, app, obj)
	if !ok {
		return true
	}
	if same, known, _ := r.known(&q); known {
		return countFolderCheck(same, known)
	}
	q.app = app.DeepCopy() // the event's app is the cache's, read-only
	r.ask(ctx, q)
	return false
}

// maxBusyRechecks bounds how often a folder check asks again for a clone in use.
const maxBusyRechecks = 5

// recordRevision adds the app's new commit (status.commit) to status.history, newest first, with
// the digest of its manifests and the older commit it restores (if any), keeping
// RevisionHistoryLimit entries. Called when status.commit changed, so the history is
// written only with a new commit.
func recordRevision(app *kubeoperav1alpha1.KubeOperaApp, now metav1.Time, manifests, restores string) {
	if len(app.Status.History) > 0 && app.Status.History[0].Commit == app.Status.Commit {
		return
	}
	entry := kubeoperav1alpha1.AppRevision{Generation: app.Generation, Commit: app.Status.Commit, PushedAt: now,
		Manifests: manifests, Restores: restores}
	history := append([]kubeoperav1alpha1.AppRevision{entry}, app.Status.History...)
	if len(history) > kubeoperav1alpha1.RevisionHistoryLimit {
		history = history[:kubeoperav1alpha1.RevisionHistoryLimit]
	}
	app.Status.History = history
}

// markApplied sets appliedAt, once, on the history entries Flux applied: the entry of the
// commit Flux applied, and the newest entry (the app's current commit) when the applied
// revision holds its folder (holds, see appliedHoldsFolder). Nothing changes once set, so a
// steady state writes nothing.
func markApplied(app *kubeoperav1alpha1.KubeOperaApp, appliedCommit string, holds bool, now metav1.Time) {
	for i := range app.Status.History {
		e := &app.Status.History[i]
		if e.AppliedAt != nil {
			continue
		}
		if (appliedCommit != "" && e.Commit == appliedCommit) || (i == 0 && holds && e.Commit == app.Status.Commit) {
			e.AppliedAt = &now
		}
	}
}

// trailerKey is the Git trailer that identifies an app's change in a commit (appTrailer).
const trailerKey = "KubeOperaApp"

// maxRequestedBy bounds the requester a trailer names, in characters.
const maxRequestedBy = 256

// appTrailer is the KubeOperaApp trailer of a commit that changes app's folder, one line that
// stays whole when the commit holds other apps' changes too:
//
//	KubeOperaApp: <namespace>/<name> uid=<uid> generation=<n> [manifests=<digest>] [restores=<commit>] [requested-by="<who>"]
//
// manifests is the digest of the files written (manifestsDigest; none for a removal), restores
// the commit of the older history entry whose manifests this commit writes again, and who the
// app's AnnotationRequestedBy (quoted, at most maxRequestedBy characters).
func appTrailer(app *kubeoperav1alpha1.KubeOperaApp, manifests, restores string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s/%s uid=%s generation=%d", trailerKey, app.Namespace, app.Name, app.UID, app.Generation)
	if manifests != "" {
		fmt.Fprintf(&b, " manifests=%s", manifests)
	}
	if restores != "" {
		fmt.Fprintf(&b, " restores=%s", restores)
	}
	if who := strings.TrimSpace(app.Annotations[kubeoperav1alpha1.AnnotationRequestedBy]); who != "" {
		if r := []rune(who); len(r) > maxRequestedBy {
			who = string(r[:maxRequestedBy])
		}
		fmt.Fprintf(&b, " requested-by=%s", strconv.QuoteToASCII(who))
	}
	return b.String()
}

// manifestsDigest identifies rendered manifests: the SHA-256 of every file's name and content in
// name order, its first 16 bytes in hex after "sha256:".
func manifestsDigest(files map[string][]byte) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// restoredCommit is the commit of the older history entry whose manifests equal manifests (an
// earlier spec applied again: a rollback, or a roll forward to a state the app had), or "" when
// the newest entry already holds them (nothing is committed) or no entry does.
func restoredCommit(app *kubeoperav1alpha1.KubeOperaApp, manifests string) string {
	history := app.Status.History
	if len(history) == 0 || history[0].Manifests == manifests {
		return ""
	}
	for _, e := range history[1:] {
		if e.Manifests == manifests {
			return e.Commit
		}
	}
	return ""
}

// restoreHistory rebuilds status.history of an app whose status was lost from the trailers of
// the branch's recent commits (gitops.Writer.Log: the last gitops.RevisionFetchDepth commits,
// each read once), newest first, at most RevisionHistoryLimit entries; appliedAt is set again
// by the passes that read back what Flux applied. When the write committed nothing (the folder
// already held the manifests), status.commit is the newest entry's, the commit that last
// changed the folder, not the branch head. A history that cannot be read is logged and left to
// start again with this commit: it is a view of Git, which keeps it. The error is a
// hand-off (outcome.Pending) only: another batch of the branch holds its clone, and the pass ends
// to read the history once it is free.
func (r *Reconciler) restoreHistory(ctx context.Context, s *scope, repo gitops.Repo, res gitops.Result, manifests string) error {
	entries, err := r.writer.Log(ctx, repo)
	if errors.Is(err, gitops.ErrBranchBusy) {
		return outcome.Pending(reasonBranchBusy, err)
	}
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("Reading the app's history from Git failed; it starts again with this commit", "error", err.Error())
		return nil
	}
	history := historyFromLog(entries, s.app.UID)
	if len(history) == 0 {
		return nil
	}
	s.app.Status.History = history
	if !res.Changed && history[0].Manifests == manifests {
		s.app.Status.Commit = history[0].Commit
	}
	r.event(s.app, corev1.EventTypeNormal, "HistoryRestored", actionReconcile,
		fmt.Sprintf("The status held no history; read %d entries back from the trailers of branch %s", len(history), repo.Branch))
	return nil
}

// historyFromLog are the history entries of the app of uid among entries (newest first): every
// commit whose KubeOperaApp trailer names uid and wrote manifests, at most RevisionHistoryLimit.
func historyFromLog(entries []gitops.LogEntry, uid types.UID) []kubeoperav1alpha1.AppRevision {
	var out []kubeoperav1alpha1.AppRevision
	for _, e := range entries {
		for _, t := range e.Trailers {
			f, ok := parseAppTrailer(t)
			if !ok || f.uid != string(uid) || f.manifests == "" {
				continue
			}
			out = append(out, kubeoperav1alpha1.AppRevision{Generation: f.generation, Commit: e.Commit,
				PushedAt: metav1.NewTime(e.When), Manifests: f.manifests, Restores: f.restores})
			if len(out) == kubeoperav1alpha1.RevisionHistoryLimit {
				return out
			}
		}
	}
	return out
}

// trailerFields are the fields of one KubeOperaApp trailer (appTrailer).
type trailerFields struct {
	app, uid, manifests, restores string
	generation                    int64
}

// parseAppTrailer reads a KubeOperaApp trailer line; ok is false for any other line.
func parseAppTrailer(t string) (trailerFields, bool) {
	value, ok := strings.CutPrefix(t, trailerKey+": ")
	if !ok {
		return trailerFields{}, false
	}
	// requested-by is last and quoted: it may hold spaces.
	value, _, _ = strings.Cut(value, " requested-by=")
	words := strings.Fields(value)
	if len(words) == 0 {
		return trailerFields{}, false
	}
	f := trailerFields{app: words[0]}
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(w, "=")
		switch k {
		case "uid":
			f.uid = v
		case "generation":
			f.generation, _ = strconv.ParseInt(v, 10, 64)
		case "manifests":
			f.manifests = v
		case "restores":
			f.restores = v
		}
	}
	return f, f.uid != ""
}
