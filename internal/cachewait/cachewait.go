// Package cachewait lets a reconciler end its pass only once the manager's cache shows the
// pass's own writes to the object it reconciles.
//
// A write reaches the cache a moment after the API server answers it (the informer's watch
// event). Another watch may queue the object meanwhile, and a pass that starts before the event
// arrives reads the object as it was: it writes the same status again, records the same Event
// again, or (for a metadata write under an optimistic lock) fails on a conflict. The workqueue
// never runs two passes of one object at once, so a pass that waits for its writes to be cached
// before it returns hands the next pass an object that holds them.
//
// The wait reads the cache only, never the API server. It ends when the cached object's
// resourceVersion is none of those the pass wrote over (the last written or a later one; the
// versions are compared for equality only, as the API asks), or when the object is gone, and
// gives up after Timeout, after which the next pass may repeat a write, harmlessly.
package cachewait

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// Timeout bounds the wait of one pass.
	Timeout = 5 * time.Second
	// poll is the interval between two reads of the cache.
	poll = 5 * time.Millisecond
)

// Versions are the resourceVersions one pass read and wrote, in order.
type Versions struct {
	seen []string
}

// New starts the record of a pass with the object as it read it.
func New(obj client.Object) *Versions {
	return &Versions{seen: []string{obj.GetResourceVersion()}}
}

// Wrote records the object as a write of the pass returned it. A write that changed nothing
// returns the version it had, which is not recorded again.
func (v *Versions) Wrote(obj client.Object) {
	rv := obj.GetResourceVersion()
	if rv == "" || v.seen[len(v.seen)-1] == rv {
		return
	}
	v.seen = append(v.seen, rv)
}

// Written reports whether the pass wrote the object.
func (v *Versions) Written() bool { return len(v.seen) > 1 }

// Await waits until c (the cache) holds the object at key at its last written version or a
// later one, or no longer holds it. into is an empty object of the kind, read into. It returns
// an error when it gave up (Timeout or ctx done).
func (v *Versions) Await(ctx context.Context, c client.Reader, key client.ObjectKey, into client.Object) error {
	if !v.Written() {
		return nil
	}
	superseded := make(map[string]bool, len(v.seen)-1)
	for _, rv := range v.seen[:len(v.seen)-1] {
		superseded[rv] = true
	}
	return wait.PollUntilContextTimeout(ctx, poll, Timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, into); err != nil {
			return apierrors.IsNotFound(err), nil
		}
		return !superseded[into.GetResourceVersion()], nil
	})
}

// Last is the version the pass's last write returned (or the one it read).
func (v *Versions) Last() string { return v.seen[len(v.seen)-1] }
