#!/usr/bin/env bash
# The file-based catalog (FBC) recipe. catalog/$PACKAGE/ and catalog.Dockerfile are generated,
# committed and checked.
#
#   hack/catalog.sh generate   put bundle/ into catalog/$PACKAGE as its version (replacing an earlier
#                              rendering of the same version), regenerate catalog.Dockerfile, validate
#   hack/catalog.sh validate   opm validate, plus what opm accepts but a catalog must not have: an
#                              empty bundle or related image
#   hack/catalog.sh verify     regenerate into a temporary tree and fail on any difference from the
#                              working tree; validate; then the upgrade test below
#
# Inputs, passed by the Makefile: VERSION, IMG, BUNDLE_IMG, PACKAGE, CHANNELS, DEFAULT_CHANNEL,
# K8S_VERSION (the last ones for hack/bundle.sh, which the upgrade test runs).
#
# catalog/$PACKAGE/ holds
#   package.yaml             olm.package (`opm init`; icon and description from config/manifests)
#   channels.yaml            one olm.channel per channel
#   bundle-v<version>.yaml   one olm.bundle per released version: `opm render ./bundle` with the
#                            bundle image (BUNDLE_IMG) filled in. Earlier versions stay as released.
# Upgrades: a version's entry in each of its channels (the bundle's channels annotation) `replaces`
# the channel's previous version and carries `skipRange: <version`, so OLM upgrades any older
# installation straight to it. The upgrade test builds the next version's bundle with the same
# recipe (hack/bundle.sh render), adds it to a copy of the catalog, and requires `opm validate` to
# pass and every channel's head to be the new version.
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

# copy_tree DEST: the catalog as it is in the working tree.
copy_tree() {
	mkdir -p "$1"
	[[ -d catalog ]] && cp -R catalog "$1/"
	[[ -f catalog.Dockerfile ]] && cp catalog.Dockerfile "$1/"
	return 0
}

generate() {
	local tree=$scratch/tree
	[[ -f bundle/metadata/annotations.yaml ]] || {
		log "bundle/ is missing: run 'make bundle' first"
		return 1
	}
	copy_tree "$tree"
	add_bundle "$tree" bundle "$BUNDLE_IMG"
	check "$tree"
	rm -rf "catalog/$PACKAGE"
	mkdir -p catalog
	cp -R "$tree/catalog/$PACKAGE" "catalog/$PACKAGE"
	cp "$tree/catalog.Dockerfile" catalog.Dockerfile
	echo "catalog: regenerated catalog/$PACKAGE and catalog.Dockerfile ($PACKAGE.v$VERSION as $BUNDLE_IMG)"
}

validate() {
	check "$root"
	echo "catalog: opm validate passed; every bundle and related image is set"
}

# upgrade_test TREE: the next minor version, built by the same recipes, upgrades from this one.
upgrade_test() {
	local tree=$1 next next_tree=$scratch/next major minor
	IFS=. read -r major minor _ <<<"${VERSION%%[-+]*}"
	next=$major.$((minor + 1)).0
	cp -R "$tree" "$next_tree"
	VERSION=$next IMG=${IMG%:*}:v$next hack/bundle.sh render "$scratch/next-bundle" >/dev/null
	add_bundle "$next_tree" "$scratch/next-bundle/bundle" "${BUNDLE_IMG%:*}:v$next"
	echo "catalog: upgrade test, v$VERSION then v$next:"
	check "$next_tree" "$PACKAGE.v$next"
	echo "catalog: a two-version catalog built by the same recipe validates; v$next upgrades from v$VERSION"
}

verify() {
	local tree=$scratch/tree p stale=0
	copy_tree "$tree"
	add_bundle "$tree" bundle "$BUNDLE_IMG"
	for p in "catalog/$PACKAGE" catalog.Dockerfile; do
		if ! diff -r -u "$p" "$tree/$p" >"$scratch/diff" 2>&1; then
			log "stale: $p"
			head -n 60 "$scratch/diff" >&2
			stale=1
		fi
	done
	if ((stale)); then
		log "the committed catalog does not hold the current bundle: run 'make bundle catalog' and commit catalog/ catalog.Dockerfile"
		return 1
	fi
	echo "catalog: catalog/$PACKAGE and catalog.Dockerfile are up to date"
	validate
	upgrade_test "$tree"
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
