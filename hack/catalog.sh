#!/usr/bin/env bash
# The file-based catalog (FBC) recipe. catalog/$PACKAGE/ and catalog.Dockerfile are generated,
# committed and checked.
#
#   hack/catalog.sh generate   rebuild catalog/$PACKAGE from every released bundle (hack/bundles/v*/)
#                              and bundle/, regenerate catalog.Dockerfile, validate
#   hack/catalog.sh validate   opm validate, plus what opm accepts but a catalog must not have: an
#                              empty bundle or related image; every channel's head is v$VERSION
#   hack/catalog.sh verify     rebuild into a temporary tree and fail on any difference from the
#                              working tree, then validate
#
# Inputs, passed by the Makefile: VERSION, IMG, BUNDLE_IMG, PACKAGE, CHANNELS, DEFAULT_CHANNEL.
#
# catalog/$PACKAGE/ holds
#   package.yaml             olm.package (`opm init`; icon and description from config/manifests)
#   channels.yaml            one olm.channel per channel
#   bundle-v<version>.yaml   one olm.bundle per version: `opm render <bundle dir>` (with the
#                            olm.bundle.object properties, no --migrate) and the bundle image filled
#                            in: ${BUNDLE_IMG%:*}:v<version> for a released bundle, BUNDLE_IMG for bundle/.
# Released bundles are frozen in hack/bundles/v<version>/ exactly as released, so the whole catalog
# is rebuilt deterministically from the tree. Bundles are added in version order; a version's entry
# in each of its channels (the bundle's channels annotation) `replaces` the channel's previous
# version and carries `skipRange: <version`, so OLM upgrades any older installation straight to it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"

: "${VERSION:?VERSION is not set (run through make)}" "${IMG:?IMG is not set}" "${BUNDLE_IMG:?BUNDLE_IMG is not set}"
: "${PACKAGE:?PACKAGE is not set}" "${DEFAULT_CHANNEL:?DEFAULT_CHANNEL is not set}"

log() { echo "catalog.sh: $*" >&2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

tools() {
	OPM=$(hack/tool.sh opm)/opm
	# The catalog image runs the same opm release that rendered it.
	OPM_IMAGE=quay.io/operator-framework/opm:$(sed -n 's/^OPM_VERSION=//p' hack/tool.sh)
	OLMTOOL=$scratch/olmtool
	[[ -x $OLMTOOL ]] || go build -o "$OLMTOOL" ./hack/olmtool
}

# annotation BUNDLE_DIR KEY: a value of the bundle's metadata/annotations.yaml.
annotation() {
	sed -n "s/^  operators\.operatorframework\.io\.bundle\.$2: //p" "$1/metadata/annotations.yaml"
}

# add_bundle TREE BUNDLE_DIR BUNDLE_IMAGE: adds the bundle to TREE/catalog/$PACKAGE and writes
# TREE/catalog.Dockerfile.
add_bundle() {
	local tree=$1 bundle_dir=$2 image=$3 pkgdir=$1/catalog/$PACKAGE channels default_channel file
	channels=$(annotation "$bundle_dir" channels.v1)
	default_channel=$(annotation "$bundle_dir" channel.default.v1)
	[[ -n $channels && $default_channel == "$DEFAULT_CHANNEL" ]] || {
		log "$bundle_dir: channels '$channels', default '$default_channel' (want default $DEFAULT_CHANNEL): run 'make bundle'"
		return 1
	}
	mkdir -p "$pkgdir"
	"$OPM" init "$PACKAGE" --default-channel="$DEFAULT_CHANNEL" --description=config/manifests/description.md \
		--icon=config/manifests/icon.svg -o yaml >"$pkgdir/package.yaml"
	"$OPM" render "$bundle_dir" -o yaml >"$scratch/rendered.yaml"
	file=$("$OLMTOOL" fbc-bundle -in "$scratch/rendered.yaml" -image "$image" -out-dir "$pkgdir")
	"$OLMTOOL" fbc-channels -file "$pkgdir/channels.yaml" -bundle "$file" -channels "$channels"
	rm -f "$tree/catalog.Dockerfile"
	(cd "$tree" && "$OPM" generate dockerfile catalog --base-image "$OPM_IMAGE" --builder-image "$OPM_IMAGE" >/dev/null)
}

# check TREE [HEAD]: opm validate, images filled in, and (with HEAD) every channel's head.
check() {
	local tree=$1 head=${2:-}
	if ! "$OPM" validate "$tree/catalog" >"$scratch/validate.log" 2>&1; then
		cat "$scratch/validate.log" >&2
		log "opm validate failed for $tree/catalog"
		return 1
	fi
	"$OLMTOOL" fbc-check -dir "$tree/catalog/$PACKAGE" ${head:+-head "$head"}
}

# released: the frozen bundle directories, lowest version first (without bundle/'s version).
released() {
	local v
	for v in $(find hack/bundles -mindepth 1 -maxdepth 1 -type d -name 'v*' -printf '%f\n' 2>/dev/null | sed 's/^v//' | sort -V); do
		[[ $v == "$VERSION" ]] || echo "hack/bundles/v$v"
	done
}

# build TREE: the whole catalog, from the released bundles and bundle/, into TREE.
build() {
	local tree=$1 dir
	[[ -f bundle/metadata/annotations.yaml ]] || {
		log "bundle/ is missing: run 'make bundle' first"
		return 1
	}
	mkdir -p "$tree"
	for dir in $(released); do
		add_bundle "$tree" "$dir" "${BUNDLE_IMG%:*}:${dir##*/}"
	done
	add_bundle "$tree" bundle "$BUNDLE_IMG"
}

generate() {
	local tree=$scratch/tree
	build "$tree"
	check "$tree" "$PACKAGE.v$VERSION"
	rm -rf "catalog/$PACKAGE"
	mkdir -p catalog
	cp -R "$tree/catalog/$PACKAGE" "catalog/$PACKAGE"
	cp "$tree/catalog.Dockerfile" catalog.Dockerfile
	echo "catalog: regenerated catalog/$PACKAGE and catalog.Dockerfile ($(released | sed 's#.*/##' | tr '\n' ' ')then v$VERSION as $BUNDLE_IMG)"
}

validate() {
	check "$root" "$PACKAGE.v$VERSION"
	echo "catalog: opm validate passed; every bundle and related image is set; every channel leads to $PACKAGE.v$VERSION"
}

verify() {
	local tree=$scratch/tree p stale=0
	build "$tree"
	for p in "catalog/$PACKAGE" catalog.Dockerfile; do
		if ! diff -r -u "$p" "$tree/$p" >"$scratch/diff" 2>&1; then
			log "stale: $p"
			head -n 60 "$scratch/diff" >&2
			stale=1
		fi
	done
	if ((stale)); then
		log "the committed catalog does not hold the released bundles and the current bundle: run 'make bundle catalog' and commit catalog/ catalog.Dockerfile"
		return 1
	fi
	echo "catalog: catalog/$PACKAGE and catalog.Dockerfile are up to date"
	validate
}

main() {
	case ${1:-} in
	generate | validate | verify)
		tools
		"$1"
		;;
	*)
		log "usage: hack/catalog.sh generate|validate|verify"
		exit 2
		;;
	esac
}

main "$@"
