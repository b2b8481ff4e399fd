package app

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kubeopera/kubeopera-operator/internal/gitops"
)

// repoUsers records which apps write to which repository branch, so that the Git writer's
// queue and local clone of a branch are released once no app uses it any more (memory and disk
// stay bounded by the repositories in use, not by every repository ever seen). It lives in
// memory: after a restart an app registers again on its next write.
type repoUsers struct {
	mu    sync.Mutex
	users map[branchKey]map[types.NamespacedName]bool
}

// branchKey is a repository branch (a location without its path).
type branchKey struct{ url, branch string }

func (l location) branchKey() branchKey { return branchKey{url: l.url, branch: l.branch} }

func newRepoUsers() *repoUsers {
	return &repoUsers{users: map[branchKey]map[types.NamespacedName]bool{}}
}

// use records that app writes to the branch of loc.
func (u *repoUsers) use(app types.NamespacedName, loc location) {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := loc.branchKey()
	if u.users[k] == nil {
		u.users[k] = map[types.NamespacedName]bool{}
	}
	u.users[k][app] = true
}

// leave records that app no longer writes to the branch of loc, and reports whether it was
// the last one.
func (u *repoUsers) leave(app types.NamespacedName, loc location) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.drop(app, loc.branchKey())
}

// leaveAll drops app from every branch and returns the branches nobody uses any more.
func (u *repoUsers) leaveAll(app types.NamespacedName) []branchKey {
	u.mu.Lock()
	defer u.mu.Unlock()
	var unused []branchKey
	for k, apps := range u.users {
		if apps[app] && u.drop(app, k) {
			unused = append(unused, k)
		}
	}
	return unused
}

func (u *repoUsers) drop(app types.NamespacedName, k branchKey) bool {
	apps := u.users[k]
	if !apps[app] {
		return false
	}
	delete(apps, app)
	if len(apps) == 0 {
		delete(u.users, k)
		return true
	}
	return false
}

// releaseRepo frees the writer's queue and clone of a branch no app uses.
func (r *Reconciler) releaseRepo(k branchKey) error {
	return r.writer.Release(gitops.Repo{URL: k.url, Branch: k.branch})
}

// leaveRepositories records that the app is gone: it writes to no branch any more, and the
// branches nobody else uses are released. It runs when the finalizer is removed and whenever a
// pass finds the app gone: a pass on a stale copy of a deleted app (the cache had not yet seen the
// finalizer's removal) registers it again before it finds out.
func (r *Reconciler) leaveRepositories(ctx context.Context, app types.NamespacedName) {
	for _, k := range r.repoUsers.leaveAll(app) {
		if err := r.releaseRepo(k); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Release the local clone of a repository no app uses")
		}
	}
}

// GitRepositories is the number of repository branches the Git writer keeps a queue for.
func (r *Reconciler) GitRepositories() int { return r.writer.Repositories() }

// VClusterClients is the number of Tenants with a cached vCluster client.
func (r *Reconciler) VClusterClients() int { return r.clients.Len() }
