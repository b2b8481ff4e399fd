// Package outcome is the one vocabulary both reconcilers (ControlPlane and KubeOperaApp) use for
// a step that did not succeed. A Failure carries the condition reason to report and what happens
// next, one of three outcomes:
//
//   - Backoff: a failure that a retry may fix (an API server, the ioFog Controller or Git did not
//     answer as hoped). The reconciler returns the error, so controller-runtime counts it in its
//     error metrics and the workqueue's per-item rate limiter schedules the retry.
//   - RequeueAfter: not a failure but something outside the operator to wait for (a load
//     balancer address, a CRD being installed), with the delay the design names. The reconciler
//     returns a requeue, no error.
//   - WaitForChange: nothing a retry can fix; the object or something it references must change,
//     and a watch brings it back then. The reconciler returns a reconcile.TerminalError: counted
//     by controller-runtime, never retried.
//
// Result turns an error into what a Reconcile returns; ReasonOf and IsTerminal classify errors
// by type, never by their text. docs/architecture.md describes where each reconciler uses which.
package outcome

import (
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Next is what happens after a step did not succeed.
type Next int

const (
	// Backoff returns the error: the workqueue's per-item rate limiter retries.
	Backoff Next = iota
	// RequeueAfter requeues after Failure.After without an error.
	RequeueAfter
	// WaitForChange returns a reconcile.TerminalError: never retried, a watch event brings the
	// object back.
	WaitForChange
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
	default:
		return "Unknown"
	}
}

// Failure is a step that did not succeed: the error, the condition reason (UpperCamel) it is
// reported under and what happens next. Condition optionally names the condition type the
// failure is reported on (the KubeOperaApp's per-step conditions); empty means the reconciler's
// own choice.
type Failure struct {
	Condition string
	Reason    string
	Next      Next
	// After is the delay of RequeueAfter; zero otherwise.
	After time.Duration
	Err   error
}

// Error is the wrapped error's text: the reason is reported beside it, not inside it.
func (f *Failure) Error() string {
	if f.Err == nil {
		return f.Reason
	}
	return f.Err.Error()
}

// Unwrap returns the wrapped error.
func (f *Failure) Unwrap() error { return f.Err }

// Retry is a failure retried with the workqueue's backoff.
func Retry(reason string, err error) *Failure {
	return &Failure{Reason: reason, Next: Backoff, Err: err}
}

// Wait is a wait for something outside the operator, retried after delay.
func Wait(reason string, delay time.Duration, err error) *Failure {
	return &Failure{Reason: reason, Next: RequeueAfter, After: delay, Err: err}
}

// Stop is a failure that only a change of the object (or of what it references) can fix.
func Stop(reason string, err error) *Failure {
	return &Failure{Reason: reason, Next: WaitForChange, Err: err}
}

// Terminal is Stop already wrapped as a reconcile.TerminalError, for code that returns it as an
// error through several layers.
func Terminal(reason string, err error) error {
	return reconcile.TerminalError(Stop(reason, err))
}

// ReasonOf returns the reason of the outermost Failure in err's chain, and whether there is one.
func ReasonOf(err error) (string, bool) {
	var f *Failure
	if errors.As(err, &f) {
		return f.Reason, true
	}
	return "", false
}

// IsTerminal reports whether err is a reconcile.TerminalError, the one thing controller-runtime
// looks at: Terminal failures are, a Stop becomes one in Result.
func IsTerminal(err error) bool {
	return errors.Is(err, reconcile.TerminalError(nil))
}

// StripTerminal returns the error a reconcile.TerminalError wraps, or err itself, so that a
// terminal failure joined with a transient one does not make the join terminal.
func StripTerminal(err error) error {
	if errors.Is(err, reconcile.TerminalError(nil)) {
		if inner := errors.Unwrap(err); inner != nil {
			return inner
		}
	}
	return err
}

// Result is what a Reconcile returns for err, decided by the outermost Failure of its chain:
// nothing for nil; a requeue without error for RequeueAfter (one without a delay is returned as
// an error, never dropped); a reconcile.TerminalError for WaitForChange; the error itself (the
// rate limiter's backoff) for Backoff and for unclassified errors. An error that is already a
// reconcile.TerminalError is returned as it is.
func Result(err error) (reconcile.Result, error) {
	if err == nil || IsTerminal(err) {
		return reconcile.Result{}, err
	}
	var f *Failure
	if !errors.As(err, &f) {
		return reconcile.Result{}, err
	}
	switch {
	case f.Next == RequeueAfter && f.After > 0:
		return reconcile.Result{RequeueAfter: f.After}, nil
	case f.Next == WaitForChange:
		return reconcile.Result{}, reconcile.TerminalError(err)
	default:
		return reconcile.Result{}, err
	}
}
