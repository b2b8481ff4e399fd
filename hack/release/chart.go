package main

import (
	"fmt"
	"os"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// packageChart packages the Helm chart of dir as `helm package` does (name-version.tgz in out),
// after loading it with Helm's own loader (which validates Chart.yaml) and checking its version
// and appVersion are version. change, when not nil, edits a copy of the chart first (the
// release's pinned images); dir itself is never written.
func packageChart(dir, version, out string, change func(dir string) error) (string, error) {
	if change != nil {
		tmp, err := os.MkdirTemp("", "chart-")
		if err != nil {
			return "", err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
			return "", fmt.Errorf("copy the chart: %w", err)
		}
		if err := change(tmp); err != nil {
			return "", err
		}
		dir = tmp
	}
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return "", fmt.Errorf("load the chart: %w", err)
	}
	if ch.Metadata.Version != version || ch.Metadata.AppVersion != version {
		return "", fmt.Errorf("chart: version %q and appVersion %q, want %q (run make build-installer)",
			ch.Metadata.Version, ch.Metadata.AppVersion, version)
	}
	path, err := chartutil.Save(ch, out)
	if err != nil {
		return "", fmt.Errorf("package the chart: %w", err)
	}
	return path, nil
}
