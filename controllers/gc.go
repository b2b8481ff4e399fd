package controllers

import (
	"runtime/debug"
)

// DefaultGCPercent is the Go collector's target the operator runs with when GOGC is not set
// (docs/benchmarks.md, "Cache scope"). The operator's memory at scale is mostly garbage between
// collections, not live data: at 100 ControlPlanes the live heap stayed near 40-50 MB while the
// resident set reached 160 MiB under Go's default GOGC=100 (the heap may grow to twice the live
// heap before a collection), driven by short-lived allocations (RSA key generation,
// server-side-apply field extraction, decoding watch events). 50 lets the heap grow by half
// the live heap instead; the extra collections cost about a second of CPU over a 100-ControlPlane
// install, which test/bench's P3 wall time includes. GOGC (and GOMEMLIMIT, which is left
// unset: the container's 512 Mi limit is far above what the operator needs) still win when set.
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
