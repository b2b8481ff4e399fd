#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 10s), one at a time and on one
# worker, so the run's cost is predictable on a 2-core machine. Seed corpora are the f.Add calls
# and any files under the package's testdata/fuzz/<Target>/ (a failing input the fuzzer finds is
# written there: commit it with the fix, and it becomes a regression test of the plain `go test`).
#
# The rendered-objects dry-run targets (the packages in apiserver_dirs) send every input to a
# real API server. The fuzz coordinator process starts one (envtest, about 6 s, before the
# fuzz clock starts) and its workers connect to it (test/testenv Shared). Their corpus's
# baseline coverage takes about 5 s of the fuzz time, so they run for FUZZTIME_APISERVER
# (default 20s; `make dryrun-long` sets it longer), or for a count when FUZZCOUNT_APISERVER is
# set. They need KUBEBUILDER_ASSETS (and FLUX_BIN_DIR for the Flux CRDs), which `make fuzz`
# passes.
#
#   hack/fuzz.sh                                   # every target
#   FUZZTIME=5m hack/fuzz.sh internal/natsconf     # longer, some packages
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
apiserver_dirs=" internal/render controllers/controlplane/internal/resources "
apiserver_fuzztime=${FUZZTIME_APISERVER:-${FUZZCOUNT_APISERVER:+${FUZZCOUNT_APISERVER}x}}
apiserver_fuzztime=${apiserver_fuzztime:-20s}
filters=" $* "

targets=$(git grep -n -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' -- '*_test.go' |
	sed -E 's#^(.*)/[^/]+_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]+).*#\1 \2#' | sort -u)
if [ -z "$targets" ]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi
n=0
while read -r dir name; do
	[ "$filters" != "  " ] && [[ "$filters" != *" $dir "* ]] && continue
	t=$fuzztime
	if [[ "$apiserver_dirs" == *" $dir "* ]]; then
		t=$apiserver_fuzztime
	fi
	echo "fuzz.sh: $dir $name ($t)"
	go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$t" -parallel 1
	n=$((n + 1))
done <<<"$targets"
if [ "$n" -eq 0 ]; then
	echo "fuzz.sh: no target matched '$*'" >&2
	exit 1
fi
echo "fuzz.sh: $n targets fuzzed ($fuzztime each, the API server targets $apiserver_fuzztime), no failing input"
