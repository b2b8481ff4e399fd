// Command olmtool holds the steps of the OLM recipes (hack/bundle.sh, hack/catalog.sh,
// hack/scorecard.sh) that shell tools cannot do safely: splitting the generated manager role into
// OLM permissions and cluster permissions, finishing the ClusterServiceVersion that operator-sdk
// generates, writing the file-based catalog's bundle and channel entries, and reading the JSON
// reports of `operator-sdk bundle validate` and `scorecard-test`.
//
// It edits YAML as data and writes it back with sorted keys, so the same input always gives the
// same bytes. Every subcommand prints its flags with -h.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// errFailed reports a check that failed after its details were printed.
var errFailed = errors.New("check failed")

type command struct {
	name    string
	summary string
	run     func(args []string, stdout io.Writer) error
}

var commands = []command{
	{"rbac", "split the generated manager role into namespaced and cluster-wide ClusterRoles", runRBAC},
	{"finalize", "finish a generated bundle's ClusterServiceVersion", runFinalize},
	{"fbc-bundle", "fill in the image of a bundle rendered by `opm render`", runFBCBundle},
	{"fbc-channels", "add a bundle version to the catalog's channels", runFBCChannels},
	{"fbc-check", "check a catalog package: images filled in, channel heads", runFBCCheck},
	{"validation-report", "check the JSON report of `operator-sdk bundle validate`: no errors, no warnings", runValidationReport},
	{"scorecard-report", "check scorecard-test JSON results: every test passed", runScorecardReport},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" {
		usage(stderr)
		return 2
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 2
		case errors.Is(err, errFailed):
			return 1
		default:
			fmt.Fprintf(stderr, "olmtool %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "olmtool: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: olmtool COMMAND [flags]")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-18s %s\n", c.name, c.summary)
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// required returns an error naming the first empty flag.
func required(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if fs.Lookup(n).Value.String() == "" {
			return fmt.Errorf("flag -%s is required", n)
		}
	}
	return nil
}
