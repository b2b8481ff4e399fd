#!/usr/bin/env bash
# Regenerates CRDs, RBAC and DeepCopy code and fails when the result differs from what was there
# before: the committed (or working-tree) generated files were stale. The regenerated files are
# left in place, so the fix is to commit them. Also fails when the main module's go.mod or go.sum
# is not what `go mod tidy` writes (a direct dependency marked indirect, an unused one kept).
set -euo pipefail
cd "$(dirname "$0")/.."

paths=(config/crd/bases config/rbac/role.yaml test/crds)
mapfile -t deepcopy < <(find api -name 'zz_generated.deepcopy.go' | sort)
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
for p in "${paths[@]}" "${deepcopy[@]}"; do
	[[ -e $p ]] && mkdir -p "$snap/$(dirname "$p")" && cp -r "$p" "$snap/$p"
done

make --no-print-directory -s manifests generate >/dev/null

mapfile -t deepcopy_after < <(find api -name 'zz_generated.deepcopy.go' | sort)
stale=0
for p in "${paths[@]}" "${deepcopy_after[@]}"; do
	if ! diff -r -q "$snap/$p" "$p" >/dev/null 2>&1; then
		echo "stale generated file(s): $p" >&2
		diff -r -u "$snap/$p" "$p" 2>&1 | head -40 >&2 || true
		stale=1
	fi
done
if ! tidy=$(go mod tidy -diff 2>&1); then
	echo "go.mod/go.sum are not tidy (run go mod tidy):" >&2
	echo "$tidy" | head -40 >&2
	stale=1
fi
if [[ $stale -ne 0 ]]; then
	echo "generated files were stale (regenerated now: review and commit them) or go.mod was not tidy" >&2
	exit 1
fi
echo "generated files are up to date"
