package gitops

import (
	"context"
	"errors"
	"time"

	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

// timedWrite is write, recorded in the Git metrics (internal/metrics): duration, batch size and
// outcome of the batch.
func (w *Writer) timedWrite(ctx context.Context, st *repoState, auth Auth, batch []*request) (string, error) {
	start := time.Now()
	commit, err := w.write(ctx, st, auth, batch)
	metrics.ObserveGitWrite(time.Since(start), len(batch), writeOutcome(batch, err))
	return commit, err
}

// writeOutcome classifies a batch write for kubeopera_git_pushes_total.
func writeOutcome(batch []*request, err error) string {
	switch {
	case errors.Is(err, ErrPushConflict):
		return metrics.GitOutcomeConflict
	case errors.Is(err, ErrAuthFailed), errors.Is(err, ErrInvalidAuth):
		return metrics.GitOutcomeAuthFailed
	case err != nil:
		return metrics.GitOutcomeError
	}
	for _, r := range batch {
		if r.changed {
			return metrics.GitOutcomeSuccess
		}
	}
	return metrics.GitOutcomeUnchanged
}
