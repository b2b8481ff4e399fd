#!/usr/bin/env bash
# Publishes a release that `make release-artifacts` (or make release) built in bin/release/v$VERSION:
# the steps of the release workflow (.github/workflows/release.yaml), one make target each.
#
#   hack/publish.sh push     push the image index (crane, from the OCI layout; the registry must
#                            answer with the pinned digest), build and push the
#                            bundle image (from the pinned bundle/) and then the catalog image (the
#                            pinned catalog/, its new bundle entry pinned to the pushed bundle
#                            image's digest), push the chart to oci://<registry>/<org>/charts
#                            (helm); record every digest in published.env
#   hack/publish.sh sign     cosign keyless: sign the four digests, attest the SBOM to the operator
#                            image (CycloneDX), sign SHA256SUMS (a Sigstore bundle beside it)
#   hack/publish.sh github   create the GitHub release v$VERSION (gh) with the CHANGELOG section as
#                            notes and install.yaml, the chart, the SBOM, the image as an OCI
#                            archive (air-gapped installs), SHA256SUMS and its signature attached
#   hack/publish.sh outputs  print published.env as the workflow's step outputs (name=value)
#   hack/publish.sh all      push, sign and github
#
# PUBLISH_DRY_RUN=1 checks that every file a step needs is there and prints each command instead
# of running it (make release-dry-run runs `all` so). Build provenance is attested by the
# workflow itself (actions/attest-build-provenance): only the build platform can vouch for it.
# Inputs: VERSION, IMAGE_TAG_BASE; CRANE, DOCKER, HELM, COSIGN, GH (commands, default by name).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
: "${VERSION:?VERSION is not set (run through make)}" "${IMAGE_TAG_BASE:?IMAGE_TAG_BASE is not set (run through make)}"
dry=${PUBLISH_DRY_RUN:-0}
# RELEASE_OUT: where the artifacts are (make release-dry-run: the tree copy is elsewhere).
out=${RELEASE_OUT:-bin/release/v$VERSION}
img=$IMAGE_TAG_BASE:v$VERSION
bundle_img=$IMAGE_TAG_BASE-bundle:v$VERSION
catalog_img=$IMAGE_TAG_BASE-catalog:v$VERSION
# Charts go next to the images: ghcr.io/kubeopera/charts/kubeopera-operator.
chart_repo=oci://${IMAGE_TAG_BASE%/*}/charts
chart=$out/kubeopera-operator-$VERSION.tgz
sbom=$out/kubeopera-operator-v$VERSION.cdx.json
published=$out/published.env
CRANE=${CRANE:-crane} DOCKER=${DOCKER:-docker} HELM=${HELM:-helm} COSIGN=${COSIGN:-cosign} GH=${GH:-gh}

log() { echo "publish: $*" >&2; }
fail() {
	log "$*"
	exit 1
}
# run CMD...: runs it, or prints it in a dry run.
run() {
	if [[ $dry == 1 ]]; then
		printf '  +' >&2
		printf ' %q' "$@" >&2
		printf '\n' >&2
	else
		"$@"
	fi
}
need() {
	local f
	for f in "$@"; do
		[[ -e $f ]] || fail "$f is missing: run make release-artifacts (or make release) for v$VERSION first"
	done
}
# digest_of FILE: the sha256 digest in FILE (docker's --metadata-file, helm push's output).
digest_of() { grep -o 'sha256:[0-9a-f]\{64\}' "$1" | head -n1; }
# A dry run has no registry to answer: it shows the commands with this placeholder.
placeholder=sha256:$(printf '0%.0s' {1..64})

push() {
	need "$out/image/index.json" "$out/image.ref" "$out/bundle/manifests" "$out/catalog" "$chart"
	local want bundle_digest catalog_digest chart_digest
	want=$(cat "$out/image.ref")
	log "image index $img (${want#*@})"
	# Without --index: crane pushes the one image index the layout names, as built (with --index it
	# would wrap the layout's index.json in a new index, whose digest is not the pinned one).
	run "$CRANE" push "$out/image" "$img"
	if [[ $dry != 1 ]]; then
		# What the registry stores must be what the release pinned (the index is pushed as built).
		[[ $("$CRANE" digest "$img") == "${want#*@}" ]] || fail "the registry's digest of $img is not ${want#*@}"
	fi

	log "bundle image $bundle_img (bundle.Dockerfile, from the pinned $out/bundle)"
	run "$DOCKER" buildx build --provenance=false -f bundle.Dockerfile -t "$bundle_img" --push \
		--metadata-file "$out/bundle-image.json" "$out"
	bundle_digest=$placeholder
	[[ $dry == 1 ]] || bundle_digest=$(digest_of "$out/bundle-image.json")

	log "catalog image $catalog_img (catalog.Dockerfile, from $out/catalog with the bundle pinned)"
	local entry=$out/catalog/kubeopera-operator/bundle-v$VERSION.yaml
	need "$entry"
	run sed -i "s#$bundle_img\$#${bundle_img%:*}@$bundle_digest#" "$entry"
	run "$DOCKER" buildx build --provenance=false -f catalog.Dockerfile -t "$catalog_img" --push \
		--metadata-file "$out/catalog-image.json" "$out"
	catalog_digest=$placeholder
	[[ $dry == 1 ]] || catalog_digest=$(digest_of "$out/catalog-image.json")

	log "chart $chart_repo/kubeopera-operator:$VERSION"
	if [[ $dry == 1 ]]; then
		run "$HELM" push "$chart" "$chart_repo"
		chart_digest=$placeholder
	else
		"$HELM" push "$chart" "$chart_repo" 2>&1 | tee "$out/chart-push.log"
		chart_digest=$(digest_of "$out/chart-push.log")
	fi
	[[ -n $bundle_digest && -n $catalog_digest && -n $chart_digest ]] || fail "a pushed digest is missing"
	{
		echo "image=$want"
		echo "image-name=${img%:*}"
		echo "image-digest=${want#*@}"
		echo "bundle=${bundle_img%:*}@$bundle_digest"
		echo "catalog=${catalog_img%:*}@$catalog_digest"
		echo "chart=${chart_repo#oci://}/kubeopera-operator@$chart_digest"
	} >"$published.tmp"
	if [[ $dry == 1 ]]; then
		log "would record in $published:"
		sed 's/^/  /' "$published.tmp" >&2
		rm -f "$published.tmp"
	else
		mv "$published.tmp" "$published"
	fi
}

# ref NAME: a digest reference recorded by push (placeholders in a dry run).
ref() {
	if [[ -f $published ]]; then
		sed -n "s/^$1=//p" "$published"
	elif [[ $dry == 1 ]]; then
		echo "<$1 digest from push>"
	else
		fail "$published is missing: run make release-publish first"
	fi
}

sign() {
	need "$sbom" "$out/SHA256SUMS"
	local r
	for r in image bundle catalog chart; do
		run "$COSIGN" sign --yes "$(ref "$r")"
	done
	run "$COSIGN" attest --yes --type cyclonedx --predicate "$sbom" "$(ref image)"
	run "$COSIGN" sign-blob --yes --bundle "$out/SHA256SUMS.sigstore.json" "$out/SHA256SUMS"
}

github() {
	need "$out/install.yaml" "$chart" "$sbom" "$out/kubeopera-operator-v$VERSION.oci.tar" "$out/SHA256SUMS"
	[[ $dry == 1 ]] || need "$out/SHA256SUMS.sigstore.json"
	(cd hack/release && go run . notes -file ../../CHANGELOG.md -version "$VERSION") >"$out/notes.md"
	local pre=()
	[[ $VERSION == *-* ]] && pre=(--prerelease)
	run "$GH" release create "v$VERSION" --verify-tag --title "v$VERSION" --notes-file "$out/notes.md" "${pre[@]}" \
		"$out/install.yaml" "$chart" "$sbom" "$out/kubeopera-operator-v$VERSION.oci.tar" "$out/SHA256SUMS" "$out/SHA256SUMS.sigstore.json"
}

case ${1:-} in
push | sign | github) "$1" ;;
outputs)
	need "$published"
	cat "$published"
	;;
all)
	push
	sign
	github
	;;
*) fail "usage: hack/publish.sh push|sign|github|outputs|all" ;;
esac
