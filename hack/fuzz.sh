#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 10s), one at a time and on one
# worker, so the run's cost is predictable on a 2-core machine. Seed corpora are the f.Add calls
# and any files under the package's testdata/fuzz/<Target>/ (a failing input the fuzzer finds is
# written there: commit it with the fix, and it becomes a regression test of the plain `go test`).
#
#   hack/fuzz.sh            # every target
#   FUZZTIME=5m hack/fuzz.sh internal/natsconf   # longer, one package
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
filter=${1:-}

targets=$(git grep -n -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' -- '*_test.go' |
	sed -E 's#^(.*)/[^/]+_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]+).*#\1 \2#' | sort -u)
if [ -z "$targets" ]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi
n=0
while read -r dir name; do
	[ -n "$filter" ] && [ "$dir" != "$filter" ] && continue
	echo "fuzz.sh: $dir $name ($fuzztime)"
	go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel 1
	n=$((n + 1))
done <<<"$targets"
if [ "$n" -eq 0 ]; then
	echo "fuzz.sh: no target matched '$filter'" >&2
	exit 1
fi
echo "fuzz.sh: $n targets fuzzed for $fuzztime each, no failing input"
