package app

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// gitSecretData keeps the data of the Git credentials Secrets the apps name, each under the UID
// and resourceVersion it was read at (the goal: host API
// requests per app per Flux interval ≤ 0.1; reading both Secrets live on every pass cost 0.2 in
// make bench P5).
//
// The manager caches only the metadata of Secrets (controllers/cache.go). A pass looks the
// Secret up there first; while its UID and resourceVersion are those of the kept data, the data
// is used without a request. A changed or replaced Secret has a new resourceVersion or UID in the
// metadata cache before the Secret watch brings its apps back, so the pass that reacts to a
// change reads it live. A Secret the metadata cache does not hold (deleted, or created a moment
// ago) is always read live, and its entry dropped.
//
// The kept data is the same a pass read before (credentials are held in memory for the pass
// anyway); it is never written anywhere. At most maxEntries Secrets are kept (each a few hundred
// bytes); past that an arbitrary entry makes room. Entries of Secrets no app names any more
// stay until they are evicted or their Secret is deleted and looked up again.
type gitSecretData struct {
	mu         sync.Mutex
	maxEntries int
	entries    map[types.NamespacedName]gitSecretEntry
}

// gitSecretEntry is one Secret's type and data at one version. data is shared: read only.
type gitSecretEntry struct {
	uid             types.UID
	resourceVersion string
	secretType      corev1.SecretType
	data            map[string][]byte
}

// defaultGitSecretEntries bounds gitSecretData: two Secrets for each of 2,000 apps.
const defaultGitSecretEntries = 4096

func newGitSecretData(maxEntries int) *gitSecretData {
	return &gitSecretData{maxEntries: maxEntries, entries: map[types.NamespacedName]gitSecretEntry{}}
}

// get returns the entry kept for key at exactly uid and resourceVersion.
func (c *gitSecretData) get(key types.NamespacedName, uid types.UID, resourceVersion string) (gitSecretEntry, bool) {
	if c == nil {
		return gitSecretEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.uid != uid || e.resourceVersion != resourceVersion {
		return gitSecretEntry{}, false
	}
	return e, true
}

// put keeps secret's type and data under its UID and resourceVersion.
func (c *gitSecretData) put(secret *corev1.Secret) {
	if c == nil {
		return
	}
	key := types.NamespacedName{Namespace: secret.Namespace, Name: secret.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.maxEntries {
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = gitSecretEntry{uid: secret.UID, resourceVersion: secret.ResourceVersion, secretType: secret.Type, data: secret.Data}
}

// forget drops key's entry.
func (c *gitSecretData) forget(key types.NamespacedName) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

// len is the number of Secrets kept.
func (c *gitSecretData) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
