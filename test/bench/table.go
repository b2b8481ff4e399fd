package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// goalKind says how a figure is compared with its goal.
type goalKind string

const (
	// goalMax: the value must not exceed limit.
	goalMax goalKind = "max"
	// goalRatio: value/floor must not exceed limit.
	goalRatio goalKind = "ratio"
	// goalOverFloor: value-floor must not exceed limit.
	goalOverFloor goalKind = "over-floor"
	// goalNone: reported only (cost growth).
	goalNone goalKind = "report"
)

// Figure is one row of the table: a measured value beside the floor measured in the same run.
type Figure struct {
	ID    string   `json:"id"`
	What  string   `json:"what"`
	Unit  string   `json:"unit"`
	Value float64  `json:"value"`
	Floor *float64 `json:"floor,omitempty"`
	// FloorWhat names the floor.
	FloorWhat string   `json:"floorWhat,omitempty"`
	Goal      goalKind `json:"goal"`
	Limit     float64  `json:"limit"`
	// Err is set when the figure could not be measured; Value is then meaningless.
	Err string `json:"error,omitempty"`
	// Note explains a missed goal (written into docs/benchmarks.md).
	Note string `json:"note,omitempty"`
}

func floorOf(v float64) *float64 { return &v }

// Ratio is value/floor, NaN without a positive floor.
func (f Figure) Ratio() float64 {
	if f.Floor == nil || *f.Floor <= 0 {
		return math.NaN()
	}
	return f.Value / *f.Floor
}

// Met reports whether the figure meets its goal (a failed measurement does not).
func (f Figure) Met() bool {
	if f.Err != "" {
		return false
	}
	switch f.Goal {
	case goalMax:
		return f.Value <= f.Limit
	case goalRatio:
		r := f.Ratio()
		return !math.IsNaN(r) && r <= f.Limit
	case goalOverFloor:
		return f.Floor != nil && f.Value-*f.Floor <= f.Limit
	default:
		return true
	}
}

func (f Figure) goalText() string {
	switch f.Goal {
	case goalMax:
		return "≤ " + num(f.Limit) + " " + f.Unit
	case goalRatio:
		return "≤ " + num(f.Limit) + "× floor"
	case goalOverFloor:
		return "≤ floor + " + num(f.Limit) + " " + f.Unit
	default:
		return "(reported)"
	}
}

func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v == math.Trunc(v) && math.Abs(v) < 1e9:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// Markdown renders the table.
func Markdown(figs []Figure) string {
	var b strings.Builder
	b.WriteString("| Figure | Value | Floor (same run) | Ratio | Goal | Met |\n")
	b.WriteString("|---|---:|---:|---:|---|:---:|\n")
	for _, f := range figs {
		value, floor, ratio := num(f.Value)+" "+f.Unit, "—", num(f.Ratio())
		if f.Floor != nil {
			floor = num(*f.Floor) + " " + f.Unit
			if f.FloorWhat != "" {
				floor += " (" + f.FloorWhat + ")"
			}
		}
		met := "yes"
		switch {
		case f.Err != "":
			value, met = "not measured", "no"
		case f.Goal == goalNone:
			met = "—"
		case !f.Met():
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s — %s | %s | %s | %s | %s | %s |\n", f.ID, f.What, value, floor, ratio, f.goalText(), met)
	}
	return b.String()
}

// Result is what a run writes to docs/benchmarks.json, which `make bench-check` reads.
type Result struct {
	Mode     string        `json:"mode"`
	Commit   string        `json:"commit"`
	Machine  string        `json:"machine"`
	Load     string        `json:"load"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration"`
	Figures  []Figure      `json:"figures"`
}

func writeJSON(path string, r Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// rerender rewrites the Markdown document beside a stored result (same name, .md) from that
// result: the figures are the stored ones; the explanations of missed goals are the current.
func rerender(path string) error {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the results file named on the command line
	if err != nil {
		return err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("parse %s: %w", path, err)
	}
	md := strings.TrimSuffix(path, filepath.Ext(path)) + ".md"
	return os.WriteFile(md, []byte(document(r)), 0o600)
}

// check compares a stored result with the goals: it prints every missed goal and returns how
// many there were.
func check(path string) (int, error) {
	b, err := os.ReadFile(path) //nolint:gosec // G304: the results file named on the command line
	if err != nil {
		return 0, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	var missed []string
	for _, f := range r.Figures {
		if !f.Met() {
			detail := num(f.Value) + " " + f.Unit
			if f.Err != "" {
				detail = "not measured: " + f.Err
			}
			missed = append(missed, fmt.Sprintf("%s (%s): %s, goal %s", f.ID, f.What, detail, f.goalText()))
		}
	}
	sort.Strings(missed)
	fmt.Printf("%s run of commit %s (%s): %d figures, %d miss their goal\n", r.Mode, r.Commit, r.Started.Format(time.RFC3339), len(r.Figures), len(missed))
	for _, m := range missed {
		fmt.Println("  MISSED", m)
	}
	return len(missed), nil
}

// stats of a sample.
func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile by the nearest-rank method.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	rank = max(0, min(rank, len(s)-1))
	return s[rank]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
