package app

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// backoff tracks consecutive failures per app in memory and turns them into requeue delays:
// base, 2*base, 4*base, ... capped at max. A success (or the app's deletion) resets it. Keeping
// it in memory is deliberate: after a restart every app starts again at base, which is what an
// operator coming back wants; nothing about it needs to survive in the API.
type backoff struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[types.NamespacedName]int
}

func newBackoff(base, maxDelay time.Duration) *backoff {
	return &backoff{base: base, max: maxDelay, failures: map[types.NamespacedName]int{}}
}

// next records one more failure of key and returns the delay before the next attempt.
func (b *backoff) next(key types.NamespacedName) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.failures[key]
	b.failures[key] = n + 1
	d := b.base
	for range n {
		d *= 2
		if d >= b.max {
			return b.max
		}
	}
	return min(d, b.max)
}

// reset forgets the failures of key.
func (b *backoff) reset(key types.NamespacedName) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, key)
}
