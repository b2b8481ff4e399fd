package controlplane

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	datasancev3 "github.com/kubeopera/kubeopera-operator/api/datasance/v3"
	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// result is the outcome of one component pass: Continue (the zero value), or Requeue after a
// delay. Failures are returned as errors beside it. Reason and message say what the component
// waits for; they end up in its status and, when it decides the pass, on the True condition.
type result struct {
	requeueAfter time.Duration
	reason       string
	message      string
}

// proceed is Continue.
func proceed() result { return result{} }

// requeue asks for another pass after delay, with an UpperCamel reason and a sentence.
func requeue(delay time.Duration, reason, message string) result {
	return result{requeueAfter: delay, reason: reason, message: message}
}

// isContinue reports whether the component finished.
func (r result) isContinue() bool { return r.requeueAfter == 0 }

// component is one sub-reconciler: router, NATS or controller. Each reads and writes only its own
// objects through the scope and is idempotent.
type component struct {
	name string
	run  func(context.Context, *scope) (result, error)
	// status returns the component's status block on the ControlPlane.
	status func(*datasancev3.ControlPlaneStatus) *datasancev3.ComponentStatus
}

// Failures use the shared vocabulary of internal/outcome: a condition reason and how to retry.
// The ControlPlane's waits are results (requeue, above), not errors, because they carry a message
// for the status, not a failure; its failures are returned as errors, so controller-runtime counts
// them and the workqueue's rate limiter backs off.

// withReason attaches a condition reason to err: a failure retried with the workqueue's backoff.
func withReason(reason string, err error) error {
	if err == nil {
		return nil
	}
	return outcome.Retry(reason, err)
}

// terminal marks err as needing a user change (reconcile.TerminalError): no backoff retries; a
// watch event (the user fixing the spec or a referenced Secret) brings the ControlPlane back.
func terminal(reason string, err error) error {
	return outcome.Terminal(reason, err)
}

// reasonOf returns the reason attached to err, or ApplyFailed for an unclassified error.
func reasonOf(err error) string {
	if reason, ok := outcome.ReasonOf(err); ok {
		return reason
	}
	return datasancev3.ReasonApplyFailed
}

// isTerminal reports whether err needs a user change rather than a retry.
func isTerminal(err error) bool { return outcome.IsTerminal(err) }

// passOutcome is the combination of every component's result for one pass (docs/controlplane.md#combining-component-results):
// any error wins and the errors are joined; otherwise the pass comes back after the shortest
// requested delay, so that no component's long wait (a held login, a LoadBalancer address)
// hides another's short poll (a handover), and reports the longest wait, the one that holds the
// ControlPlane up the longest; otherwise all components continued and the ControlPlane is ready.
// Every component gates its own slow work on the time it recorded, never on the pass cadence, so
// an earlier pass costs cached reads.
type passOutcome struct {
	err          error
	requeueAfter time.Duration
	// reason and message come from the first component that failed, or else from the first one
	// with the longest delay.
	reason, message string
}

// ready reports whether every component continued.
func (o passOutcome) ready() bool { return o.err == nil && o.requeueAfter == 0 }

// componentOutcome pairs a component's result with its error, in component order.
type componentOutcome struct {
	res result
	err error
}

// combine folds the component outcomes. The joined error is terminal only when every failure is
// terminal: a transient failure beside a terminal one must still be retried.
func combine(outs []componentOutcome) passOutcome {
	var (
		o           passOutcome
		longest     time.Duration
		errs        []error
		allTerminal = true
	)
	for _, c := range outs {
		switch {
		case c.err != nil:
			if len(errs) == 0 {
				o.reason, o.message = reasonOf(c.err), stripTerminal(c.err).Error()
			}
			errs = append(errs, c.err)
			allTerminal = allTerminal && isTerminal(c.err)
		case c.res.requeueAfter > 0:
			if o.requeueAfter == 0 || c.res.requeueAfter < o.requeueAfter {
				o.requeueAfter = c.res.requeueAfter
			}
			if c.res.requeueAfter > longest {
				longest = c.res.requeueAfter
				if len(errs) == 0 {
					o.reason, o.message = c.res.reason, c.res.message
				}
			}
		}
	}
	if len(errs) == 0 {
		return o
	}
	o.requeueAfter = 0
	if allTerminal {
		o.err = reconcile.TerminalError(errors.Join(unwrapTerminal(errs)...))
		return o
	}
	o.err = errors.Join(unwrapTerminal(errs)...)
	return o
}

// unwrapTerminal strips the TerminalError wrapper of every error, so that joining does not make
// a transient failure terminal.
func unwrapTerminal(errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		out[i] = stripTerminal(err)
	}
	return out
}

// stripTerminal returns the error a reconcile.TerminalError wraps, or err itself.
func stripTerminal(err error) error { return outcome.StripTerminal(err) }
