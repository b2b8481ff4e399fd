package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeopera/kubeopera-operator/internal/olmcheck"
)

// validationReport is the `-o json-alpha1` output of `operator-sdk bundle validate`.
type validationReport struct {
	Passed  bool `json:"passed"`
	Outputs []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"outputs"`
}

// runValidationReport fails on any error or warning: operator-sdk exits 0 on warnings.
func runValidationReport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("validation-report", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("usage: validation-report FILE")
	}
	data, err := os.ReadFile(filepath.Clean(fs.Arg(0)))
	if err != nil {
		return err
	}
	var r validationReport
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("%s is not an operator-sdk JSON report: %w", fs.Arg(0), err)
	}
	findings := 0
	for _, o := range r.Outputs {
		if olmcheck.IsPDBRuleFalsePositive(o.Type, o.Message) {
			fmt.Fprintf(stdout, "  ignored, a known false positive (operator-framework/api#378): %s\n", o.Message)
			continue
		}
		findings++
		fmt.Fprintf(stdout, "  %s: %s\n", o.Type, o.Message)
	}
	if !r.Passed || findings > 0 {
		fmt.Fprintf(stdout, "bundle validation: %d finding(s); errors and warnings are both failures\n", findings)
		return errFailed
	}
	return nil
}

// testStatus is what scorecard-test prints (scorecard.operatorframework.io/v1alpha3 TestStatus).
type testStatus struct {
	Results []struct {
		Name        string   `json:"name"`
		State       string   `json:"state"`
		Errors      []string `json:"errors"`
		Suggestions []string `json:"suggestions"`
		Log         string   `json:"log"`
	} `json:"results"`
}

// runScorecardReport prints one line per result and fails unless every result passed.
func runScorecardReport(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("scorecard-report", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("usage: scorecard-report FILE [FILE]")
	}
	total, passed := 0, 0
	for _, f := range fs.Args() {
		data, err := os.ReadFile(filepath.Clean(f))
		if err != nil {
			return err
		}
		var s testStatus
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("%s is not scorecard-test output: %w", f, err)
		}
		if len(s.Results) == 0 {
			return fmt.Errorf("%s holds no results", f)
		}
		for _, r := range s.Results {
			total++
			if r.State == "pass" {
				passed++
			}
			fmt.Fprintf(stdout, "  %-26s %s\n", r.Name, r.State)
			for _, e := range r.Errors {
				fmt.Fprintf(stdout, "      error: %s\n", e)
			}
			for _, sg := range r.Suggestions {
				fmt.Fprintf(stdout, "      suggestion: %s\n", sg)
			}
			if r.State != "pass" && strings.TrimSpace(r.Log) != "" {
				fmt.Fprintf(stdout, "      log: %s\n", strings.ReplaceAll(strings.TrimSpace(r.Log), "\n", "\n           "))
			}
		}
	}
	fmt.Fprintf(stdout, "scorecard: %d/%d tests passed\n", passed, total)
	if passed != total {
		return errFailed
	}
	return nil
}
