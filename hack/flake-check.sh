#!/usr/bin/env bash
# make flake-check: runs the tests whose assertions hold over a time window or count what
# happened in one (Consistently, "no hot loop", writes counted after a trigger), and the tests
# that flaked before, FLAKE_COUNT times each (default 5) under -race while a parallel `go test`
# of other packages keeps both cores busy. Prints one line per test (runs, failures) and a total;
# exits 1 on any failure. FLAKE_REPORT names a file the table is also written to (Markdown).
#
#   make flake-check                          # the whole list, 5 times
#   FLAKE_COUNT=2 hack/flake-check.sh app     # one group, twice
set -euo pipefail
cd "$(dirname "$0")/.."
count=${FLAKE_COUNT:-5}
report=${FLAKE_REPORT:-}
filters=" $* "

# group|module dir|package|-run pattern. A group is what a caller may name on the command line.
groups='
app|.|./controllers/app|^(TestUnchangedManifestsMakeNoCommit|TestDeleteKeepsTheAppWhileTheKustomizationIsStuckUntilAbandoned|TestDeleteRetriesGitFailuresUntilTheGitStepIsSkipped|TestDeleteWithUnreachableThenReachableVCluster|TestTenantCloudSpaceMismatchIsRefused|TestSyncedAppInSteadyStateWritesNothing|TestBadInputMatrix|TestFiftyRepositoriesLeaveNoCloneOrQueueBehind|TestVClusterConnectionsClosedWhenUnusedOrGone|TestHostileTenantCannotExhaustTheOperatorOrDelayAnotherTenant|TestDeleteWithUnreachableVClusterIsAbandonedOnRequest|TestPassesThatChangeNothingReadTheStatusBack|TestAnAppRecordsItsDecisionsOnly)$
controlplane|.|./controllers/controlplane|^(TestBadInputConditions|TestControllerResetsKeepTheRetryCadence|TestOperandRolesReadOnlyTheirSecrets|TestNatsReloadsWithoutARollout|TestRealNatsServer)$
fake|.|./internal/iofog/fake|^TestAddNatsAccountPatchesTheHubBundle$
manager|.|./controllers|^TestManagerStartsWithoutTenantCRD$
gitops|.|./internal/gitops|^(TestIdleClonesAreEvictedOverTheCacheLimit|TestWriteAfterAPendingReleaseKeepsTheBranch|TestReleaseWhileAWriteIsQueuedDropsTheBranchOnceIdle|TestFetchIsCutOffAtTheSizeLimit|TestSubmit.*)$
apptest|.|./internal/apptest|^TestExitedSeesAnExitedController$
chaos|.|./test/chaos|^TestFailover$
monitoring|test/monitoring|./...|^TestAlertsFireOnARealRun$
'

# The load: the pure packages' tests under -race, again and again, until the check ends.
load() {
	while :; do
		go test -race -count=1 ./internal/render ./internal/natsconf ./internal/routerconf ./internal/pki >/dev/null 2>&1 || true
	done
}
load &
load_pid=$!
trap 'kill "$load_pid" 2>/dev/null; pkill -P "$load_pid" 2>/dev/null || true' EXIT

out=$(mktemp -d)
total_runs=0 total_fail=0 lines=()
start=$SECONDS
while IFS='|' read -r group dir pkg run; do
	[ -z "$group" ] && continue
	[ "$filters" != "  " ] && [[ "$filters" != *" $group "* ]] && continue
	echo "flake-check: $group ($pkg -run '$run', $count processes, -race, CPU loaded)" >&2
	t0=$SECONDS
	# One process per repetition: a run is what a newcomer's `make test` is (a fresh process, a
	# fresh API server), and process-wide state (controller names, the metrics registry) starts
	# clean each time, as it does there.
	: >"$out/$group.json"
	for _ in $(seq "$count"); do
		(cd "$dir" && go test -race -json -count=1 -timeout 60m -run "$run" "$pkg") >>"$out/$group.json" || true
	done
	# One line per test: runs and failures (top-level tests only; subtests fold into them).
	while read -r name runs fails; do
		lines+=("| $group | $name | $runs | $fails |")
		total_runs=$((total_runs + runs))
		total_fail=$((total_fail + fails))
		if [ "$fails" -gt 0 ]; then
			echo "flake-check: FAIL $name ($fails of $runs); its output:" >&2
			grep -F "\"Test\":\"$name\"" "$out/$group.json" | sed -n 's/.*"Action":"output".*"Output":"\(.*\)"}$/\1/p' |
				sed 's/\\n$//; s/\\t/\t/g' | tail -40 >&2
		fi
	done < <(go run ./hack/flakecount <"$out/$group.json")
	echo "flake-check: $group done in $((SECONDS - t0))s" >&2
done <<<"$groups"

table="| group | test | runs | failures |
|---|---|---:|---:|
$(printf '%s\n' "${lines[@]}")
| **total** | | **$total_runs** | **$total_fail** |"
echo "$table"
echo "flake-check: $total_runs runs, $total_fail failures in $((SECONDS - start))s (count $count, -race, CPU loaded)"
if [ -n "$report" ]; then
	printf '%s\n' "$table" >"$report"
fi
[ "$total_runs" -gt 0 ] || { echo "flake-check: no test ran" >&2; exit 1; }
[ "$total_fail" -eq 0 ]
