package main

import (
	"errors"
	"flag"
	"fmt"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// chartCmd packages the Helm chart as `helm package` does, after loading it with Helm's own
// loader (which validates Chart.yaml) and checking its version and appVersion are -version.
func chartCmd(args []string) error {
	fs := flag.NewFlagSet("chart", flag.ContinueOnError)
	dir := fs.String("dir", "../../dist/chart", "chart directory")
	version := fs.String("version", "", "operator version, without v: the chart's version and appVersion")
	out := fs.String("out", "../../bin", "directory of the package")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" {
		return errors.New("chart: -version is required")
	}
	ch, err := loader.LoadDir(*dir)
	if err != nil {
		return fmt.Errorf("load the chart: %w", err)
	}
	if ch.Metadata.Version != *version || ch.Metadata.AppVersion != *version {
		return fmt.Errorf("chart: %s has version %q and appVersion %q, want %q (run make build-installer)",
			*dir, ch.Metadata.Version, ch.Metadata.AppVersion, *version)
	}
	path, err := chartutil.Save(ch, *out)
	if err != nil {
		return fmt.Errorf("package the chart: %w", err)
	}
	fmt.Printf("chart: %s\n", path)
	return nil
}
