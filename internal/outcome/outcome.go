// Package outcome is the one vocabulary both reconcilers (ControlPlane and KubeOperaApp) use to
// end a pass early. A step returns an *Error that carries the condition reason to report and
// what happens next, one of four outcomes:
//
//   - Backoff (Retry): a failure that a retry may fix (an API server, the ioFog Controller or Git
//     did not answer as hoped). The reconciler returns the error, so controller-runtime counts it
//     in its error metrics and the workqueue's per-item rate limiter schedules the retry.
//   - RequeueAfter (Wait): not a failure but something outside the operator to wait for (a load
//     balancer address, a Deployment becoming available), with the delay the design names and a
//     sentence for the status. The reconciler returns a requeue, no error.
//   - WaitForChange (Stop): nothing a retry can fix; the object or something it references must
//     change, and a watch brings it back then. The reconciler returns a reconcile.TerminalError:
//     counted by controller-runtime, never retried.
//   - HandOff (Pending): the work was handed to something that runs outside the pass (a Git push
//     of a batch) and nothing is decided yet: the pass writes no status and is not requeued; the
//     one the work was handed to brings the object back when it is done.
//
// A step that succeeds returns nil. Result turns a pass's error into what a Reconcile returns;
// Of, ReasonOf, IsWait, IsPending and IsTerminal classify errors by type, never by their text.
// docs/architecture.md shows where each reconciler uses which.
package outcome

import (
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Next is what happens after a pass ended early.
type Next int

const (
	// Backoff returns the error: the workqueue's per-item rate limiter retries.
	Backoff Next = iota
	// RequeueAfter requeues after Error.After without an error.
	RequeueAfter
	// WaitForChange returns a reconcile.TerminalError: never retried, a watch event brings the
	// object back.
	WaitForChange
	// HandOff ends the pass with no status write and no requeue: the work was handed over and
	// whoever took it brings the object back.
	HandOff
)

// String names the outcome for logs and test failures.
func (n Next) String() string {
	switch n {
	case Backoff:
		return "Backoff"
	case RequeueAfter:
		return "RequeueAfter"
	case WaitForChange:
		return "WaitForChange"
	case HandOff:
		return "HandOff"
	default:
		return "Unknown"
	}
}

// Error ends a pass early: the cause (or, for a wait, a sentence saying what is awaited), the
// condition reason (UpperCamel) it is reported under and what happens next. Condition optionally
// names the condition type it is reported on (the KubeOperaApp's per-step conditions); empty
// means the reconciler's own choice.
type Error struct {
	Condition string
	Reason    string
	Next      Next
	// After is the delay of RequeueAfter; zero otherwise.
	After time.Duration
	// Message is the sentence of a wait, which has no cause.
	Message string
	Err     error
}

// Error is the cause's text, or the wait's message: the reason is reported beside it.
func (e *Error) Error() string {
	switch {
	case e.Err != nil:
		return e.Err.Error()
	case e.Message != "":
		return e.Message
	default:
		return e.Reason
	}
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// On names the condition type e is reported on and returns e.
func (e *Error) On(condition string) *Error {
	e.Condition = condition
	return e
}

// Retry is a failure retried with the workqueue's backoff.
func Retry(reason string, err error) *Error {
	return &Error{Reason: reason, Next: Backoff, Err: err}
}

// Wait is a wait for something outside the operator, tried again after delay; message says what
// is awaited, as a sentence for the status.
func Wait(reason string, delay time.Duration, message string) *Error {
	return &Error{Reason: reason, Next: RequeueAfter, After: delay, Message: message}
}

// Stop is a failure that only a change of the object (or of what it references) can fix.
func Stop(reason string, err error) *Error {
	return &Error{Reason: reason, Next: WaitForChange, Err: err}
}

// Pending is a hand-off: err says what the pass handed over (a push of a batch) or waits for
// (a branch another batch holds); the pass ends undecided.
func Pending(reason string, err error) *Error {
	return &Error{Reason: reason, Next: HandOff, Err: err}
}

// Of returns the outermost *Error in err's chain, and whether there is one.
func Of(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// ReasonOf returns the reason of the outermost *Error in err's chain, and whether there is one.
func ReasonOf(err error) (string, bool) {
	if e, ok := Of(err); ok {
		return e.Reason, true
	}
	return "", false
}

// IsWait reports whether err is a wait (RequeueAfter): not a failure.
func IsWait(err error) bool {
	e, ok := Of(err)
	return ok && e.Next == RequeueAfter
}

// IsPending reports whether err is a hand-off: the pass decides nothing.
func IsPending(err error) bool {
	e, ok := Of(err)
	return ok && e.Next == HandOff
}

// IsTerminal reports whether err is never retried: a Stop, or an error already wrapped as a
// reconcile.TerminalError (what Result returns for a Stop).
func IsTerminal(err error) bool {
	if errors.Is(err, reconcile.TerminalError(nil)) {
		return true
	}
	e, ok := Of(err)
	return ok && e.Next == WaitForChange
}

// Result is what a Reconcile returns for a pass that ended with err, decided by the outermost
// *Error of its chain: nothing for nil and for a hand-off; a requeue without error for a wait
// (one without a delay is returned as an error, never dropped); a reconcile.TerminalError for a
// Stop; the error itself (the rate limiter's backoff) for a Retry and for unclassified errors.
// An error that is already a reconcile.TerminalError is returned as it is.
func Result(err error) (reconcile.Result, error) {
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
		return reconcile.Result{}, err
	}
	e, ok := Of(err)
	switch {
	case !ok:
		return reconcile.Result{}, err
	case e.Next == HandOff:
		return reconcile.Result{}, nil
	case e.Next == RequeueAfter && e.After > 0:
		return reconcile.Result{RequeueAfter: e.After}, nil
	case e.Next == WaitForChange:
		return reconcile.Result{}, reconcile.TerminalError(err)
	default:
		return reconcile.Result{}, err
	}
}
