package monitoring_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/kubeopera/kubeopera-operator/internal/metrics"
	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// checkDashboard fails when a query of config/grafana/kubeopera-operator.json names a metric
// that is not in exported (the series names of a real scrape), or when a metric of
// internal/metrics has no panel.
func checkDashboard(t *testing.T, exported map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.Root(), "config", "grafana", "kubeopera-operator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash dashboardPanels
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	used := map[string]bool{}
	queries := 0
	for _, p := range dash.all() {
		for _, target := range p.Targets {
			queries++
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(target.Expr)
			if err != nil {
				t.Errorf("panel %q: query %q does not parse: %v", p.Title, target.Expr, err)
				continue
			}
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				if vs, ok := node.(*parser.VectorSelector); ok {
					used[vs.Name] = true
					if !exported[vs.Name] {
						t.Errorf("panel %q: metric %s is not exported by the operator", p.Title, vs.Name)
					}
				}
				return nil
			})
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, name := range metrics.Names() {
		if !used[name] && !used[name+"_bucket"] && !used[name+"_sum"] && !used[name+"_count"] {
			t.Errorf("metric %s has no panel", name)
		}
	}
}

type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"` // rows nest panels
}

type dashboardPanels struct {
	Panels []dashboardPanel `json:"panels"`
}

func (d dashboardPanels) all() []dashboardPanel {
	var out []dashboardPanel
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// seriesNames are the names the series of a scrape have in Prometheus.
func seriesNames(mfs []*dto.MetricFamily) map[string]bool {
	names := map[string]bool{}
	for _, mf := range mfs {
		n := mf.GetName()
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[n+s] = true
			}
		case dto.MetricType_SUMMARY:
			names[n], names[n+"_sum"], names[n+"_count"] = true, true, true
		default:
			names[n] = true
		}
	}
	return names
}
