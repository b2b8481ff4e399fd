#!/usr/bin/env bash
# Runs the scorecard tests of bundle/tests/scorecard/config.yaml (the basic and OLM suites) locally,
# without a cluster, and fails unless every result is "pass".
#
# These six tests only read the bundle. In a cluster, `operator-sdk scorecard ./bundle` runs each
# one as a pod of the scorecard-test image with the bundle mounted at /bundle; here the same
# scorecard-test binary (built from the operator-sdk module by hack/tool.sh) runs in a private mount
# namespace in which ./bundle is bind-mounted on /bundle, so nothing outside this process sees the
# mount. As root that needs `unshare -m`; other users need unprivileged user namespaces and an
# existing /bundle directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"

readonly TESTS=(basic-check-spec olm-bundle-validation olm-crds-have-validation olm-crds-have-resources
	olm-spec-descriptors olm-status-descriptors)
readonly CONFIG=bundle/tests/scorecard/config.yaml

log() { echo "scorecard.sh: $*" >&2; }

command -v unshare >/dev/null || {
	log "unshare (util-linux) is required: apt-get install util-linux"
	exit 1
}
[[ -f $CONFIG ]] || {
	log "$CONFIG is missing: run 'make bundle'"
	exit 1
}
# The local run and the bundle's configuration must name the same tests.
for t in "${TESTS[@]}"; do
	grep -q -- "- $t\$" "$CONFIG" || {
		log "$CONFIG does not run $t"
		exit 1
	}
done
configured=$(grep -c -- '- scorecard-test$' "$CONFIG")
((configured == ${#TESTS[@]})) || {
	log "$CONFIG runs $configured tests, this script knows ${#TESTS[@]}: keep them in step"
	exit 1
}

scorecard_test=$(hack/tool.sh operator-sdk)/scorecard-test
scratch=$(mktemp -d)
created_mountpoint=0
cleanup() {
	rm -rf "$scratch"
	if ((created_mountpoint)); then rmdir /bundle 2>/dev/null || true; fi
}
trap cleanup EXIT
go build -o "$scratch/olmtool" ./hack/olmtool

if [[ $EUID -eq 0 ]]; then
	unshare_args=(--mount)
	if [[ ! -d /bundle ]]; then
		mkdir /bundle
		created_mountpoint=1
	fi
else
	unshare_args=(--mount --map-root-user)
	[[ -d /bundle ]] || {
		log "/bundle does not exist and only root can create it: run as root, or 'sudo mkdir /bundle' once"
		exit 1
	}
fi

# In the private mount namespace: bind the bundle, run every test, write one JSON result per test.
# shellcheck disable=SC2016 # expanded by the inner shell
unshare "${unshare_args[@]}" bash -c '
	set -euo pipefail
	bundle=$1 bin=$2 out=$3
	shift 3
	mount --bind "$bundle" /bundle
	for t in "$@"; do
		"$bin" "$t" >"$out/$t.json"
	done
' scorecard "$root/bundle" "$scorecard_test" "$scratch" "${TESTS[@]}"

results=()
for t in "${TESTS[@]}"; do results+=("$scratch/$t.json"); done
"$scratch/olmtool" scorecard-report "${results[@]}"
