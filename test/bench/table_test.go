package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestQuantileNearestRank(t *testing.T) {
	xs := []float64{5, 1, 4, 2, 3}
	if got := median(xs); got != 3 {
		t.Fatalf("median = %v, want 3", got)
	}
	if got := quantile(xs, 0.95); got != 5 {
		t.Fatalf("p95 = %v, want 5", got)
	}
	if got := quantile(nil, 0.5); !math.IsNaN(got) {
		t.Fatalf("quantile of nothing = %v, want NaN", got)
	}
	if xs[0] != 5 {
		t.Fatal("quantile sorted its input in place")
	}
}

func TestGoals(t *testing.T) {
	cases := []struct {
		f    Figure
		want bool
	}{
		{Figure{Value: 500, Goal: goalMax, Limit: 500}, true},
		{Figure{Value: 501, Goal: goalMax, Limit: 500}, false},
		{Figure{Value: 15, Floor: floorOf(10), Goal: goalRatio, Limit: 1.5}, true},
		{Figure{Value: 16, Floor: floorOf(10), Goal: goalRatio, Limit: 1.5}, false},
		{Figure{Value: 16, Goal: goalRatio, Limit: 1.5}, false}, // no floor: cannot be met
		{Figure{Value: 60, Floor: floorOf(50), Goal: goalOverFloor, Limit: 10}, true},
		{Figure{Value: 61, Floor: floorOf(50), Goal: goalOverFloor, Limit: 10}, false},
		{Figure{Value: 1, Goal: goalMax, Limit: 5, Err: "boom"}, false}, // not measured
		{Figure{Value: 1e9, Goal: goalNone}, true},
	}
	for i, c := range cases {
		if got := c.f.Met(); got != c.want {
			t.Errorf("case %d: Met() = %v, want %v (%+v)", i, got, c.want, c.f)
		}
	}
}

func TestCheckReportsMissedGoals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.json")
	r := Result{Mode: "full", Commit: "abc", Figures: []Figure{
		{ID: "P1", Value: 100, Goal: goalMax, Limit: 500},
		{ID: "P2", Value: 3, Goal: goalMax, Limit: 0},
	}}
	if err := writeJSON(path, r); err != nil {
		t.Fatal(err)
	}
	missed, err := check(path)
	if err != nil {
		t.Fatal(err)
	}
	if missed != 1 {
		t.Fatalf("missed = %d, want 1", missed)
	}
	md := Markdown(r.Figures)
	if !strings.Contains(md, "| P2 — ") || !strings.Contains(md, "**no**") {
		t.Fatalf("table does not flag the missed goal:\n%s", md)
	}
}

func TestManagerMemoryRequestIsTheShippedOne(t *testing.T) {
	got, err := managerMemoryRequest()
	if err != nil {
		t.Fatal(err)
	}
	if got != 128 {
		t.Fatalf("memory request %v MiB, want the 128 Mi of config/manager/manager.yaml", got)
	}
}
