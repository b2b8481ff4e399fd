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
# set. They need KUBEBUILDER_ASSETS (and FLUX_CRD_DIR for the Flux CRDs), which `make fuzz`
# passes.
#
#   hack/fuzz.sh                                   # every target
#   FUZZTIME=5m hack/fuzz.sh internal/natsconf     # longer, some packages
set -euo pipefail
cd "$(dirname "$0")/.."
# FUZZTIME and FUZZTIME_APISERVER are -fuzztime values: a duration (10s) or a count of inputs
# (1000x). make test passes counts: a count's cost is fixed and Go 1.26's deadline race
# (golang/go#75804) cannot fail it.
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
# count_files prints how many inputs a corpus directory holds (0 when it does not exist).
count_files() { if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi; }

n=0
while read -r dir name; do
	[ "$filters" != "  " ] && [[ "$filters" != *" $dir "* ]] && continue
	t=$fuzztime
	if [[ "$apiserver_dirs" == *" $dir "* ]]; then
		t=$apiserver_fuzztime
	fi
	echo "fuzz.sh: $dir $name ($t)"
	corpus="$dir/testdata/fuzz/$name"
	before=$(count_files "$corpus")
	log=$(mktemp)
	if go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$t" -parallel 1 2>&1 | tee "$log"; then
		:
	elif [[ $t != *x ]] && [ "$(count_files "$corpus")" -eq "$before" ] &&
		grep -A1 -E "^--- FAIL: $name " "$log" | grep -qx '    context deadline exceeded'; then
		# Go 1.26's fuzz coordinator can fail a duration-bounded run at its deadline with "context
		# deadline exceeded" and no input (golang/go#75804, fixed in Go 1.27): nothing was found.
		# make test uses count budgets (-fuzztime Nx), which that race cannot hit.
		echo "fuzz.sh: $name: the Go 1.26 fuzztime deadline race (golang/go#75804), no failing input; not a finding"
	else
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
	n=$((n + 1))
done <<<"$targets"
if [ "$n" -eq 0 ]; then
	echo "fuzz.sh: no target matched '$*'" >&2
	exit 1
fi
echo "fuzz.sh: $n targets fuzzed ($fuzztime each, the API server targets $apiserver_fuzztime), no failing input"
