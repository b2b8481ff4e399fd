// Command bench is the benchmark harness of `make bench`: it measures what a platform team
// cares about — ControlPlane and app readiness latency, steady-state writes, scale and memory,
// Git throughput, tenant scale (100 vClusters, 1,000 apps) — against real envtest API servers (with audit logs), the operator built from
// main.go running as its own process, fake Controllers (internal/iofog/fake), the test Git
// server and the real Flux controllers, and prints one table in which every figure stands beside
// a floor measured in the same run. A full run rewrites docs/benchmarks.md and
// docs/benchmarks.json; -check compares a stored run with the goals. Benchmarks report: a
// missed goal does not fail the run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	klog "k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kubeopera/kubeopera-operator/test/testenv"
)

// sizes of one mode.
type sizes struct {
	name        string
	runs        int           // P1 runs
	window      time.Duration // P2 window
	cps         [2]int        // P3 sizes
	unrelated   int           // P3 unrelated Secrets (and as many ConfigMaps)
	apps        [2]int        // P4 sizes, one repository
	spreadApps  int           // P4 apps over spreadRepos repositories
	spreadRepos int
	tenants     tenantSizes // P5
	branchApps  int         // P6: Synced apps sharing one branch
}

var (
	full  = sizes{"full", 20, 60 * time.Second, [2]int{25, 100}, 10000, [2]int{50, 200}, 200, 20, tenantSizes{100, 10, 10, 12 * time.Second}, 200}
	quick = sizes{"quick", 5, 10 * time.Second, [2]int{5, 20}, 2000, [2]int{10, 40}, 40, 4, tenantSizes{5, 2, 2, 2 * time.Second}, 20}
)

func main() {
	quickMode := flag.Bool("quick", false, "small sizes (a few minutes): for development; writes -out-quick, not docs/")
	out := flag.String("out", filepath.Join(testenv.Root(), "docs", "benchmarks.md"), "where a full run writes the table (and the .json beside it)")
	outQuick := flag.String("out-quick", filepath.Join(testenv.Root(), "bin", "benchmarks-quick.md"), "where a quick run writes the table")
	renderFile := flag.String("render", "", "rewrite the .md beside a stored run (a .json written by this command) with the current explanations, without measuring")
	checkFile := flag.String("check", "", "compare a stored run (a .json written by this command) with the goals and exit 1 when one is missed")
	only := flag.String("only", "", "run only these phases, comma-separated: latency, scale, memory, git, tenants, branch")
	p5Tenants := flag.Int("p5-tenants", 0, "P5 (tenants): number of vClusters (0: the mode's, 100 full, 5 quick)")
	p5Apps := flag.Int("p5-apps", 0, "P5: apps per vCluster (0: the mode's, 10 full, 2 quick)")
	p5Repos := flag.Int("p5-repos", 0, "P5: Git repositories the apps are spread over (0: the mode's, 10 full, 2 quick)")
	p5Interval := flag.Duration("p5-flux-interval", 0, "P5: the played Flux interval, standing for 1 min (0: the mode's, 12s full, 2s quick)")
	p6Apps := flag.Int("p6-apps", 0, "P6 (branch): Synced apps sharing the branch (0: the mode's, 200 full, 20 quick)")
	flag.BoolVar(&keepWork, "keep", false, "keep the work directory (each phase's operator.log) instead of deleting it")
	flag.StringVar(&heapProfileDir, "heap-profile", "", "serve the operator's pprof on loopback and write its heap profile at the end of each P3 scale run and of P5's steady state, and its CPU profile of each P4 case's first 10 s and of the first minute of P5's way to all Synced, into this directory (go tool pprof)")
	flag.StringVar(&operatorBin, "operator", "", "use this operator binary instead of building main.go (e.g. an older commit, to compare)")
	flag.Parse()

	if *renderFile != "" {
		if err := rerender(*renderFile); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		return
	}
	if *checkFile != "" {
		missed, err := check(*checkFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if missed > 0 {
			os.Exit(1)
		}
		return
	}

	// The harness's own libraries stay quiet; the operator logs to its own file.
	ctrl.SetLogger(logr.Discard())
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	log.SetOutput(io.Discard) // the test Git server logs every request

	m := full
	dest := *out
	if *quickMode {
		m, dest = quick, *outQuick
	}
	m.tenants = m.tenants.with(*p5Tenants, *p5Apps, *p5Repos, *p5Interval)
	if *p6Apps > 0 {
		m.branchApps = *p6Apps
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	res, err := run(ctx, m, *only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Println()
	fmt.Print(Markdown(res.Figures))
	if err := os.MkdirAll(filepath.Dir(dest), 0o750); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(dest, []byte(document(res)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	jsonPath := dest[:len(dest)-len(filepath.Ext(dest))] + ".json"
	if err := writeJSON(jsonPath, res); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	fmt.Printf("\nwrote %s and %s (%s)\n", dest, jsonPath, res.Duration.Round(time.Second))
}

// operatorBin, when set, replaces the build of main.go.
var operatorBin string

// heapProfileDir, when set, receives the operator's heap profile after each P3 scale run.
var heapProfileDir string

// keepWork keeps the run's work directory.
var keepWork bool

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
