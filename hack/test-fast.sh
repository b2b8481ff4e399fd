#!/usr/bin/env bash
# make test-fast: the edit loop. Runs `go vet` and the tests (unit and envtest, no -race) of the
# packages whose files changed against FAST_BASE (default HEAD: the uncommitted change, untracked
# files included), plus the packages of this module that import them directly. Nothing else of
# `make test` runs (no lint, no fuzz, no OLM checks): `make test` stays what CI runs.
#
#   make test-fast                       # what the working tree changes
#   FAST_BASE=origin/main make test-fast # everything since origin/main
#   hack/test-fast.sh ./internal/gitops  # these packages (and their direct importers)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${FAST_BASE:-HEAD}
module=$(go list -m)

if [ $# -gt 0 ]; then
	changed_pkgs=$(go list "$@")
else
	files=$({
		git diff --name-only "$base" --
		git ls-files --others --exclude-standard
	} | sort -u)
	dirs=$(printf '%s\n' "$files" | grep -E '\.go$|/testdata/' | sed -E 's#/testdata/.*##; s#/[^/]*$##; s#^[^/]*\.go$#.#' | sort -u || true)
	changed_pkgs=""
	for d in $dirs; do
		# Directories of other modules (test/monitoring) and removed directories are skipped.
		[ -d "$d" ] || continue
		[ -f "$d/go.mod" ] && [ "$d" != . ] && continue
		p=$(go list "./$d" 2>/dev/null || true)
		[ -n "$p" ] && changed_pkgs+="$p"$'\n'
	done
fi
changed_pkgs=$(printf '%s' "$changed_pkgs" | sed '/^$/d' | sort -u)
if [ -z "$changed_pkgs" ]; then
	echo "test-fast: no Go package changed against $base"
	exit 0
fi

# Direct importers (tests included) of the changed packages, within this module.
pattern=$(printf '%s\n' "$changed_pkgs" | sed 's/[.]/\\./g' | paste -sd'|')
importers=$(go list -f '{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
	awk -v re="^($pattern)\$" '{for (i = 2; i <= NF; i++) if ($i ~ re) {print $1; break}}')
pkgs=$(printf '%s\n%s\n' "$changed_pkgs" "$importers" | sed '/^$/d' | grep "^$module" | sort -u)
echo "test-fast: $(echo "$pkgs" | wc -l) packages:" $(echo "$pkgs" | sed "s#^$module#.#")
# shellcheck disable=SC2086
go vet $pkgs
# shellcheck disable=SC2086
go test -count=1 -timeout 15m $pkgs
