// Command flakecount reads `go test -json` output on stdin and prints, per top-level test, how
// many times it ran and how many of those runs failed ("name runs failures", sorted by name).
// The input may hold several runs of a package, one after another. A package run that failed
// outside any test (a build error, a TestMain check, a panic) is printed as
// "<package>:package 1 1", so that such a failure is never lost from the count.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
}

func main() {
	runs, fails := map[string]int{}, map[string]int{}
	testFailed := map[string]bool{}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // build output and other non-JSON lines
		}
		switch {
		case e.Test == "" && e.Action == "start":
			// A new run of the package (the input may hold several processes' output).
			testFailed[e.Package] = false
		case e.Test != "" && !strings.Contains(e.Test, "/"):
			switch e.Action {
			case "pass", "fail":
				runs[e.Test]++
				if e.Action == "fail" {
					fails[e.Test]++
					testFailed[e.Package] = true
				}
			}
		case e.Test == "" && e.Action == "fail" && !testFailed[e.Package]:
			name := e.Package + ":package"
			runs[name]++
			fails[name]++
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "flakecount:", err)
		os.Exit(1)
	}
	names := make([]string, 0, len(runs))
	for n := range runs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Println(n, runs[n], fails[n])
	}
}
