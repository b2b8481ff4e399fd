package gitops

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fluxcd/pkg/gittestserver"
)

// fetchCounter counts the fetches that reach the server (upload-pack POSTs: a fetch that finds
// the clone up to date sends none).
type fetchCounter struct{ n atomic.Int64 }

func (c *fetchCounter) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			c.n.Add(1)
		}
		next.ServeHTTP(w, r)
	})
}

func sameFolder(t *testing.T, w *Writer, repo Repo, path, a, b string) bool {
	t.Helper()
	same, err := w.SameFolder(context.Background(), repo, path, a, b)
	if err != nil {
		t.Fatalf("SameFolder(%s, %s, %s): %v", path, a, b, err)
	}
	return same
}

// TestSameFolderComparesTheAppsFolderOnly: other apps' commits on the branch leave an app's
// folder the same; its own change does not. The commits the Writer pushed are in its clone:
// no fetch.
func TestSameFolderComparesTheAppsFolderOnly(t *testing.T) {
	fetches := &fetchCounter{}
	repo := testRepo(newServer(t, func(s *gittestserver.GitServer) { s.AddHTTPMiddlewares(fetches.middleware) }))
	w := newTestWriter(t)
	a1 := apply(t, w, repo, appChange("a", map[string]string{"app.yaml": "v1"})).Commit
	b1 := apply(t, w, repo, appChange("b", map[string]string{"app.yaml": "v1"})).Commit
	b2 := apply(t, w, repo, appChange("b", map[string]string{"app.yaml": "v2"})).Commit
	a2 := apply(t, w, repo, appChange("a", map[string]string{"app.yaml": "v2"})).Commit
	before := fetches.n.Load()

	if !sameFolder(t, w, repo, "apps/ns/a", a1, b2) {
		t.Errorf("app a's folder differs between its commit and b's later commit")
	}
	if sameFolder(t, w, repo, "apps/ns/a", b2, a2) {
		t.Errorf("app a's folder is the same after its own change")
	}
	if sameFolder(t, w, repo, "apps/ns/b", b1, b2) {
		t.Errorf("app b's folder is the same after its own change")
	}
	if !sameFolder(t, w, repo, "apps/ns/b", b2, a2) {
		t.Errorf("app b's folder differs after a's change")
	}
	// A folder that does not exist at one of the commits: different; at neither: the same.
	if sameFolder(t, w, repo, "apps/ns/b", a1, b1) {
		t.Errorf("app b's folder before it was written counts as the same")
	}
	if !sameFolder(t, w, repo, "apps/ns/c", a1, a2) {
		t.Errorf("a folder absent at both commits counts as different")
	}
	if got := fetches.n.Load() - before; got != 0 {
		t.Errorf("SameFolder fetched %d times for commits the Writer pushed", got)
	}
	if _, err := w.SameFolder(context.Background(), repo, "apps/ns/a", "abc", a1); !errors.Is(err, ErrInvalidChange) {
		t.Errorf("a short hash: err = %v, want ErrInvalidChange", err)
	}
}

// TestSameFolderFetchesOnceForACommitNotInTheClone: a commit another writer pushed before the
// clone's last (shallow) fetch is not in the clone; SameFolder fetches the branch's recent
// history once and answers, then answers again from its cache. A commit that is not on the
// branch is fetched for once only, and the clone still pushes afterwards.
func TestSameFolderFetchesOnceForACommitNotInTheClone(t *testing.T) {
	fetches := &fetchCounter{}
	repo := testRepo(newServer(t, func(s *gittestserver.GitServer) { s.AddHTTPMiddlewares(fetches.middleware) }))
	w := newTestWriter(t)
	a1 := apply(t, w, repo, appChange("a", map[string]string{"app.yaml": "v1"})).Commit
	x1, err := outsideCommit(repo, false, writeFile("other/one.txt", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outsideCommit(repo, false, writeFile("other/two.txt", "2")); err != nil {
		t.Fatal(err)
	}
	// The Writer's shallow sync brings the head only: x1 is not in the clone.
	b1 := apply(t, w, repo, appChange("b", map[string]string{"app.yaml": "v1"})).Commit

	before := fetches.n.Load()
	if !sameFolder(t, w, repo, "apps/ns/a", x1, b1) {
		t.Errorf("app a's folder differs at an outside commit that did not touch it")
	}
	if got := fetches.n.Load() - before; got != 1 {
		t.Errorf("fetches for a commit not in the clone = %d, want 1", got)
	}
	before = fetches.n.Load()
	if !sameFolder(t, w, repo, "apps/ns/a", x1, b1) || !sameFolder(t, w, repo, "apps/ns/a", b1, x1) {
		t.Errorf("the second answer differs")
	}
	if sameFolder(t, w, repo, "apps/ns/b", x1, b1) {
		t.Errorf("app b's folder at the outside commit (before b was written) is the same")
	}
	if got := fetches.n.Load() - before; got != 0 {
		t.Errorf("fetches for commits read before = %d, want 0", got)
	}

	unknown := "0123456789abcdef0123456789abcdef01234567"
	before = fetches.n.Load()
	for range 2 {
		if _, err := w.SameFolder(context.Background(), repo, "apps/ns/a", unknown, a1); !errors.Is(err, ErrRevisionNotFound) {
			t.Fatalf("a commit not on the branch: err = %v, want ErrRevisionNotFound", err)
		}
	}
	if got := fetches.n.Load() - before; got != 1 {
		t.Errorf("fetches for a commit not on the branch, asked twice = %d, want 1", got)
	}

	// The deepened clone still writes and pushes.
	a2 := apply(t, w, repo, appChange("a", map[string]string{"app.yaml": "v2"}))
	if !a2.Changed || remoteHeadOf(t, repo) != a2.Commit {
		t.Fatalf("write after the history fetch: %+v, remote head %s", a2, remoteHeadOf(t, repo))
	}
	if got := readRemote(t, repo, nil).files(t)["apps/ns/a/app.yaml"]; got != "v2" {
		t.Errorf("remote app.yaml = %q", got)
	}
}
