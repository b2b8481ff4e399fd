package app

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubeopera/kubeopera-operator/internal/outcome"
)

// A failed step is an internal/outcome Failure, the vocabulary the ControlPlane reconciler
// shares: the condition and reason to report and what happens next. retry, waitThenRetry and
// stop name the three outcomes as the app's steps use them.

// stepError is a failed step.
type stepError = outcome.Failure

const (
	// retryWithBackoff: a failure that depends on the vCluster or Git; the pass returns the
	// error and the workqueue's rate limiter retries (30s, doubling, capped).
	retryWithBackoff = outcome.Backoff
	// retryAfter: not a failure, something to wait for; requeue after stepError.After.
	retryAfter = outcome.RequeueAfter
	// waitForChange: nothing a retry can fix (the app or another object must change, and a
	// watch brings the app back then): a reconcile.TerminalError, never retried.
	waitForChange = outcome.WaitForChange
)

func retry(condition, reason string, err error) *stepError {
	return onCondition(condition, outcome.Retry(reason, err))
}

func waitThenRetry(condition, reason string, after time.Duration, err error) *stepError {
	return onCondition(condition, outcome.Wait(reason, after, err))
}

func stop(condition, reason string, err error) *stepError {
	return onCondition(condition, outcome.Stop(reason, err))
}

// onCondition reports f on the app condition named condition (and on Ready).
func onCondition(condition string, f *stepError) *stepError {
	f.Condition = condition
	return f
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
