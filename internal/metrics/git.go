package metrics

import "time"

// Outcomes of a Git batch write.
const (
	GitOutcomeSuccess    = "success"
	GitOutcomeUnchanged  = "unchanged"
	GitOutcomeConflict   = "conflict"
	GitOutcomeAuthFailed = "auth_failed"
	GitOutcomeError      = "error"
)

// ObserveGitWrite records one Git batch write of changes app changes that took d and ended with
// outcome (one of the GitOutcome constants).
func ObserveGitWrite(d time.Duration, changes int, outcome string) {
	std.observeGitWrite(d, changes, outcome)
}

func (s *set) observeGitWrite(d time.Duration, changes int, outcome string) {
	s.gitPushes.WithLabelValues(outcome).Inc()
	s.gitDuration.Observe(d.Seconds())
	s.gitBatch.Observe(float64(changes))
}

// GitPushRetried counts one push redone because the remote branch moved.
func GitPushRetried() { std.gitRetries.Inc() }

// SetGitClones sets the number of clones the Git writer keeps.
func SetGitClones(n int) { std.gitClones.Set(float64(n)) }

// SetTenantClients sets the number of vCluster clients in the tenant client cache.
func SetTenantClients(n int) { std.tenantCache.Set(float64(n)) }
