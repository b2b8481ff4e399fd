package controllers

import (
	"runtime/debug"
	"testing"
)

// Without GOGC the operator runs with DefaultGCPercent; with it, the runtime's value (from GOGC)
// is left alone.
func TestApplyGCDefaults(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	if got := ApplyGCDefaults(func(string) string { return "" }); got != DefaultGCPercent {
		t.Fatalf("without GOGC: %d, want %d", got, DefaultGCPercent)
	}
	if p := debug.SetGCPercent(100); p != DefaultGCPercent {
		t.Fatalf("the runtime's percent is %d, want %d", p, DefaultGCPercent)
	}
	env := map[string]string{"GOGC": "100"}
	if got := ApplyGCDefaults(func(k string) string { return env[k] }); got != 100 {
		t.Fatalf("with GOGC=100: %d, want 100 (left alone)", got)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("with GOGC=100 the runtime's percent changed to %d", p)
	}
}
