package controlplane

import (
	"context"
	"errors"
	"time"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// component is one sub-reconciler: router, NATS or controller. Each reads and writes only its own
// objects through the scope and is idempotent.
type component struct {
	name string
	// run returns nil when the component is done, an outcome.Wait when it waits for something
	// outside the operator, and any other error when it failed.
	run func(*Reconciler, context.Context, *scope, controllerConversation) error
	// status returns the component's status block on the ControlPlane.
	status func(*datasancev3.ControlPlaneStatus) *datasancev3.ComponentStatus
}

// A component ends its pass with the vocabulary of internal/outcome: nil when it is done, an
// outcome.Wait (a reason and a sentence for its status, and the delay after which it looks again)
// while it waits for something outside the operator, outcome.Retry for a failure the workqueue's
// rate limiter retries, outcome.Stop for one only a user change fixes (a watch event, the user
// fixing the spec or a referenced Secret, brings the ControlPlane back).

// reasonOf returns the reason attached to err, or ApplyFailed for an unclassified error.
func reasonOf(err error) string {
	if reason, ok := outcome.ReasonOf(err); ok {
		return reason
	}
	return datasancev3.ReasonApplyFailed
}

// passOutcome is the combination of every component's outcome for one pass
// (docs/controlplane.md#combining-component-outcomes): any failure wins and the failures are
// joined; otherwise the pass comes back after the shortest requested delay, so that no
// component's long wait (a held login, a LoadBalancer address) hides another's short poll (a
// handover), and reports the longest wait, the one that holds the ControlPlane up the longest;
// otherwise all components are done and the ControlPlane is ready. Every component gates its own
// slow work on the time it recorded, never on the pass cadence, so an earlier pass costs cached
// reads.
type passOutcome struct {
	// err is nil when every component is done, else an internal/outcome error: the joined
	// failures (a Retry, or a Stop when every failure is terminal), or a Wait with the shortest
	// delay.
	err error
	// reason and message come from the first component that failed, or else from the first one
	// with the longest delay.
	reason, message string
}

// ready reports whether every component is done.
func (o passOutcome) ready() bool { return o.err == nil }

// failed reports whether a component failed (rather than waits).
func (o passOutcome) failed() bool { return o.err != nil && !outcome.IsWait(o.err) }

// combine folds the components' errors, in component order (nil: the component is done). The
// joined failure is terminal only when every failure is terminal: a transient failure beside a
// terminal one must still be retried.
func combine(errs []error) passOutcome {
	var (
		o                 passOutcome
		shortest, longest time.Duration
		failures          []error
		allTerminal       = true
	)
	for _, err := range errs {
		switch {
		case err == nil:
		case outcome.IsWait(err):
			w, _ := outcome.Of(err)
			if shortest == 0 || w.After < shortest {
				shortest = w.After
			}
			if w.After > longest {
				longest = w.After
				if len(failures) == 0 {
					o.reason, o.message = w.Reason, w.Error()
				}
			}
		default:
			if len(failures) == 0 {
				o.reason, o.message = reasonOf(err), err.Error()
			}
			failures = append(failures, err)
			allTerminal = allTerminal && outcome.IsTerminal(err)
		}
	}
	switch {
	case len(failures) > 0 && allTerminal:
		o.err = outcome.Stop(o.reason, errors.Join(failures...))
	case len(failures) > 0:
		o.err = outcome.Retry(o.reason, errors.Join(failures...))
	case longest > 0:
		o.err = outcome.Wait(o.reason, shortest, o.message)
	}
	return o
}
