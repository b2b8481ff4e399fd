package gitops

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kubeopera/kubeopera-operator/internal/metrics"
)

func TestWriteOutcome(t *testing.T) {
	changed, unchanged := &request{changed: true}, &request{}
	for _, tt := range []struct {
		name  string
		batch []*request
		err   error
		want  string
	}{
		{"pushed", []*request{unchanged, changed}, nil, metrics.GitOutcomeSuccess},
		{"nothing to push", []*request{unchanged}, nil, metrics.GitOutcomeUnchanged},
		{"conflict", []*request{changed}, fmt.Errorf("push: %w", ErrPushConflict), metrics.GitOutcomeConflict},
		{"auth rejected", []*request{changed}, fmt.Errorf("fetch: %w", ErrAuthFailed), metrics.GitOutcomeAuthFailed},
		{"no credentials", []*request{changed}, fmt.Errorf("ssh: %w", ErrInvalidAuth), metrics.GitOutcomeAuthFailed},
		{"network", []*request{changed}, errors.New("dial tcp: connection refused"), metrics.GitOutcomeError},
	} {
		if got := writeOutcome(tt.batch, tt.err); got != tt.want {
			t.Errorf("%s: writeOutcome = %q, want %q", tt.name, got, tt.want)
		}
	}
}
