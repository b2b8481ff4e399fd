package app

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
)

// next says what happens after a step failed.
type next int

const (
	// retryWithBackoff: a failure that depends on the vCluster or Git; the pass returns the
	// error and the workqueue's rate limiter retries (30s, doubling, capped).
	retryWithBackoff next = iota
	// retryAfter: not a failure, something to wait for; requeue after stepError.after.
	retryAfter
	// waitForChange: nothing a retry can fix (the app or another object must change, and a
	// watch brings the app back then): a reconcile.TerminalError, never retried.
	waitForChange
)

// stepError is a failed step: the condition and reason to report and what to do next.
type stepError struct {
	condition string
	reason    string
	next      next
	after     time.Duration
	err       error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func retry(condition, reason string, err error) *stepError {
	return &stepError{condition: condition, reason: reason, next: retryWithBackoff, err: err}
}

func waitThenRetry(condition, reason string, after time.Duration, err error) *stepError {
	return &stepError{condition: condition, reason: reason, next: retryAfter, after: after, err: err}
}

func stop(condition, reason string, err error) *stepError {
	return &stepError{condition: condition, reason: reason, next: waitForChange, err: err}
}

// unreachable reports whether err from a vCluster request means the vCluster did not answer
// (connection refused, timeout, DNS, TLS), as opposed to an answer with an error status.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	return !isAPIError(err) && !apimeta.IsNoMatchError(err)
}

// isAPIError reports whether err carries an API server's answer (a Status).
func isAPIError(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status)
}

// ignoreGone treats NotFound, and the kind not being served at all (Flux not installed), as
// success for a delete.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
		return nil
	}
	return err
}
