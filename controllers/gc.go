package controllers

import (
	"runtime/debug"
)

// DefaultGCPercent is the Go collector's target the operator runs with when GOGC is not set
// (docs/benchmarks.md, "Cache scope"). The operator's memory at scale is mostly garbage between
// collections, not live data: at 100 ControlPlanes a heap profile held about 50 MB live while the
// resident set reached 160 MiB under Go's default GOGC=100 (the heap may grow to twice the live
// heap before a collection), driven by short-lived allocations (1.7 GB over the install: RSA key
// generation, server-side-apply field extraction, decoding watch events). 50 lets the heap grow
// by half the live heap instead; with it and the cache changes of the same commit the peak was
// 128 MiB and test/bench's P3 wall time did not grow (91 s against 110 s). GOGC (and GOMEMLIMIT,
// left unset: the container's 512 Mi limit is far above what the operator needs) win when set.
const DefaultGCPercent = 50

// ApplyGCDefaults sets DefaultGCPercent unless getenv("GOGC") is set; main calls it once, first.
// It returns the percent in force.
func ApplyGCDefaults(getenv func(string) string) int {
	if v := getenv("GOGC"); v != "" {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(DefaultGCPercent)
	return DefaultGCPercent
}
