#!/usr/bin/env bash
# make release VERSION=x.y.z: everything a release commits and publishes, built offline.
#
#   1. CHANGELOG.md: the Unreleased section becomes "[x.y.z] - <date>" (refused when it lists
#      nothing); VERSION in the Makefile, createdAt of the base CSV, the image of config/manager
#      and the image references in the README, CONTRIBUTING.md and docs/ move to x.y.z;
#   2. make manifests bundle: bundle/ for x.y.z (it replaces the highest frozen release), then
#      bundle/ is frozen as hack/bundles/vx.y.z, exactly as released;
#   3. make catalog build-installer: the catalog with every frozen release, dist/install.yaml and
#      the chart at x.y.z;
#   4. the artifacts (`hack/release.sh artifacts` alone: make release-artifacts, which the release
#      workflow runs on the tag), in bin/release/vx.y.z/: the OCI image (make image: both
#      platforms as an index, an OCI layout and its tar archive); the published manifests with
#      the images pinned by digest (hack/release pin: bundle/ for the bundle image, install.yaml,
#      the packaged chart; checked to agree); the SBOM (CycloneDX JSON of the manager's module
#      graph, cyclonedx-gomod); SHA256SUMS;
#   5. what to commit and tag, printed with the image digest: pushing the tag runs the release
#      workflow (.github/workflows/release.yaml), which publishes and signs.
#
# RELEASE_DRY_RUN=1 (make release-dry-run) does all of it in a temporary copy of the working
# tree, so the tree is left as it is; only bin/release/ is written. A real release needs a clean
# working tree (RELEASE_ALLOW_DIRTY=1 overrides) and a version no release has used.
# Inputs: VERSION, IMAGE_TAG_BASE (the Makefile's), RELEASE_DATE (default: today, UTC),
# RELEASE_PLATFORMS (default linux/amd64,linux/arm64), REVISION and SOURCE_DATE_EPOCH (the
# commit and its time, for a reproducible image).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

: "${VERSION:?usage: make release VERSION=x.y.z}" "${IMAGE_TAG_BASE:?IMAGE_TAG_BASE is not set (run through make)}"
dry=${RELEASE_DRY_RUN:-0}
date=${RELEASE_DATE:-$(date -u +%F)}
platforms=${RELEASE_PLATFORMS:-linux/amd64,linux/arm64}
revision=${REVISION:-$(git rev-parse HEAD 2>/dev/null || true)}
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
img=$IMAGE_TAG_BASE:v$VERSION
out=$root/bin/release/v$VERSION

log() { echo "release: $*" >&2; }
fail() {
	log "$*"
	exit 1
}

[[ $VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || fail "VERSION $VERSION is not x.y.z (or x.y.z-pre)"
mode=${1:-release}
if [[ $mode == release && $dry == 1 && -d hack/bundles/v$VERSION && $(sed -n 's/^VERSION ?= //p' Makefile) == "$VERSION" ]]; then
	# A release commit (the tag's, or main right after a release): there is nothing to move or
	# freeze, so the dry run builds and checks what the release workflow would publish from it.
	log "v$VERSION is the tree's released version: dry run of its artifacts and publication"
	mode=artifacts
fi
case $mode in
release) [[ ! -e hack/bundles/v$VERSION ]] || fail "v$VERSION is released already (hack/bundles/v$VERSION is frozen)" ;;
artifacts)
	# The release commit (the tag's): make release has frozen the bundle and moved VERSION.
	[[ -d hack/bundles/v$VERSION ]] || fail "v$VERSION is not released in this tree (no hack/bundles/v$VERSION): run make release VERSION=$VERSION first"
	[[ $(sed -n 's/^VERSION ?= //p' Makefile) == "$VERSION" ]] || fail "the Makefile's VERSION is not $VERSION"
	;;
*) fail "usage: hack/release.sh [artifacts]" ;;
esac
previous=$(find hack/bundles -mindepth 1 -maxdepth 1 -type d -name 'v*' -printf '%f\n' | sed 's/^v//' | sort -V | tail -n1)
if [[ -n $previous && $(printf '%s\n%s\n' "$previous" "$VERSION" | sort -V | tail -n1) != "$VERSION" ]]; then
	fail "VERSION $VERSION is not above the last release $previous"
fi
old=$(sed -n 's/^VERSION ?= //p' Makefile)

# artifacts TREE: the release's files in $out, built from TREE (whose VERSION is $VERSION).
artifacts() {
	local tree=$1
	rm -rf "$out"
	mkdir -p "$out"
	step "image ($platforms)"
	mk image PLATFORMS="$platforms" | tee "$out/image.txt" >&2
	rm -rf "$out/image"
	mv "$tree/bin/image" "$out/image"
	mv "$tree/bin/kubeopera-operator-v$VERSION.oci.tar" "$out/"
	digest=$(sed -n 's/^image: index \(sha256:[0-9a-f]*\),.*/\1/p' "$out/image.txt")
	[[ -n $digest ]] || fail "no image digest in the output of make image"
	echo "${img%:*}@$digest" >"$out/image.ref"

	step "bundle/, install.yaml and the chart with the images pinned by digest"
	relgo pin -root "$tree" -version "$VERSION" -image "$img" -digest "$digest" -out "$out" >&2

	step "SBOM (CycloneDX, cyclonedx-gomod app: the manager's module graph)"
	# cyclonedx-gomod takes the main module's version from Git (the tag on HEAD, else a pseudo-version
	# of HEAD), and in a release commit that is not tagged yet it would be a pseudo-version: it reads
	# a copy of the release tree committed once and tagged v$VERSION, as the release commit will be.
	local cyclonedx sbom_tree
	cyclonedx=$(hack/tool.sh cyclonedx-gomod)/cyclonedx-gomod
	sbom_tree=$(mktemp -d)
	tar --exclude=./bin --exclude=./.git -C "$tree" -cf - . | tar -xf - -C "$sbom_tree"
	(cd "$sbom_tree" && git init -q && git add -A && GIT_AUTHOR_DATE="@$epoch" GIT_COMMITTER_DATE="@$epoch" \
		git -c user.name=release -c user.email=release@localhost -c commit.gpgsign=false commit -q -m "v$VERSION" &&
		git -c tag.gpgsign=false tag "v$VERSION")
	(cd "$sbom_tree" && GOOS=linux GOARCH=amd64 CGO_ENABLED=0 "$cyclonedx" app \
		-json -licenses -std -output "$out/kubeopera-operator-v$VERSION.cdx.json" -main . 2>"$out/sbom.log") ||
		{
			cat "$out/sbom.log" >&2
			rm -rf "$sbom_tree"
			fail "cyclonedx-gomod failed"
		}
	rm -rf "$sbom_tree" "$out/sbom.log"

	step "SHA256SUMS"
	# The files attached to the GitHub release; bundle/ and image/ are published as images.
	(cd "$out" && rm -f image.txt && find . -maxdepth 1 -type f ! -name SHA256SUMS ! -name image.ref -printf '%f\n' | sort | xargs sha256sum >SHA256SUMS)
	step "done"
}

start=$SECONDS
step() { log "$(printf '[%3ds]' $((SECONDS - start))) $*"; }
mk() { make -C "$tree" --no-print-directory VERSION="$VERSION" REVISION="$revision" SOURCE_DATE_EPOCH="$epoch" "$@"; }
relgo() { (cd "$tree/hack/release" && go run . "$@"); }

if [[ $mode == artifacts ]]; then
	tree=$root
	artifacts "$tree"
	if [[ $dry == 1 ]]; then
		PUBLISH_DRY_RUN=1 RELEASE_OUT="$out" VERSION="$VERSION" IMAGE_TAG_BASE="$IMAGE_TAG_BASE" hack/publish.sh all
	fi
	echo "Release v$VERSION artifacts in ${out#"$root"/}/ (image $(cat "$out/image.ref"))"
	exit 0
fi

if [[ $dry == 1 ]]; then
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	tree=$scratch/tree
	mkdir -p "$tree"
	# The working tree as it is (committed or not), without what Git ignores.
	git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
		[[ -e $f ]] && printf '%s\0' "$f"
	done | tar --null -T - -cf - | tar -xf - -C "$tree"
	log "dry run: releasing v$VERSION from a copy of the working tree ($tree)"
else
	if [[ ${RELEASE_ALLOW_DIRTY:-0} != 1 && -n $(git status --porcelain) ]]; then
		fail "the working tree has changes: commit them first (or RELEASE_ALLOW_DIRTY=1)"
	fi
	tree=$root
fi

step "CHANGELOG.md, VERSION, createdAt, image references: $old -> $VERSION"
relgo changelog -file "$tree/CHANGELOG.md" -version "$VERSION" -date "$date" -previous "$previous"
sed -i "s/^VERSION ?= .*/VERSION ?= $VERSION/" "$tree/Makefile"
sed -i "s/^    createdAt: \".*\"$/    createdAt: \"${date}T00:00:00Z\"/" "$tree/config/manifests/bases/kubeopera-operator.clusterserviceversion.yaml"
kustomize=$(hack/tool.sh kustomize)/kustomize
(cd "$tree/config/manager" && "$kustomize" edit set image "controller=$img")
if [[ $old != "$VERSION" ]]; then
	base=${IMAGE_TAG_BASE//./\\.}
	sed -i "s#\(${base}[a-z-]*\):v${old//./\\.}\b#\1:v$VERSION#g" "$tree/README.md" "$tree/CONTRIBUTING.md" "$tree"/docs/*.md
	# The install commands of the README: release downloads, raw files of the tag, the chart version.
	sed -i -e "s#/releases/download/v${old//./\\.}/#/releases/download/v$VERSION/#g" \
		-e "s#/kubeopera-operator/v${old//./\\.}/config/#/kubeopera-operator/v$VERSION/config/#g" \
		-e "s#charts/kubeopera-operator --version ${old//./\\.}\b#charts/kubeopera-operator --version $VERSION#g" "$tree/README.md"
fi

step "bundle/ for v$VERSION, frozen as hack/bundles/v$VERSION"
mk manifests bundle >/dev/null
cp -R "$tree/bundle" "$tree/hack/bundles/v$VERSION"

step "catalog, dist/install.yaml, dist/chart"
mk catalog build-installer >/dev/null

artifacts "$tree"
if [[ $dry == 1 ]]; then
	# What the release workflow would publish from these artifacts, every input checked.
	step "publish plan (hack/publish.sh all, dry run)"
	PUBLISH_DRY_RUN=1 RELEASE_OUT="$out" VERSION="$VERSION" IMAGE_TAG_BASE="$IMAGE_TAG_BASE" "$tree/hack/publish.sh" all
fi

cat <<EOF

Release v$VERSION $([[ $dry == 1 ]] && echo "(dry run: the working tree is unchanged)")
  image      $img
  digest     $(cat "$out/image.ref")   ($platforms)
  artifacts  ${out#"$root"/}/: $(cd "$out" && find . -maxdepth 1 -type f -printf '%f ' | sort)
  pinned     ${out#"$root"/}/bundle, catalog, install.yaml and the chart name the images by digest

To publish: read the diff (prose that names a version, README and docs/, is not rewritten), then
  git add -A && git commit -m "Release v$VERSION" && git tag -s v$VERSION -m v$VERSION
  git push origin HEAD v$VERSION
The tag starts .github/workflows/release.yaml: make ci, make release-artifacts, make
release-publish (image, bundle, catalog, chart), make release-sign (cosign keyless, SBOM
attestation), the provenance attestation, make release-github. Without the workflow, the same
targets run by hand with registry and GitHub credentials (docs/release.md).
EOF
