#!/usr/bin/env bash
# The OLM bundle recipe. bundle/ and bundle.Dockerfile are generated, committed and checked.
#
#   hack/bundle.sh generate     regenerate config/manifests/rbac/role.yaml, bundle/ and
#                               bundle.Dockerfile, then validate
#   hack/bundle.sh validate     operator-sdk bundle validate, operatorframework suite, at K8S_VERSION:
#                               no errors and no warnings
#   hack/bundle.sh verify       regenerate into a temporary tree, fail on any difference from the
#                               working tree, then validate
#   hack/bundle.sh render DIR   build the bundle into DIR only (hack/catalog.sh's upgrade test)
#
# Inputs, passed by the Makefile: VERSION, IMG, PACKAGE, CHANNELS, DEFAULT_CHANNEL, K8S_VERSION.
#
# Pipeline (CRDs and config/rbac/role.yaml come from controller-gen, `make manifests`):
#   0. operator-sdk generate kustomize manifests (on the temporary copy, see render);
#   1. hack/olmtool rbac splits the generated manager ClusterRole into namespaced rules (CSV
#      permissions) and cluster-wide rules (CSV clusterPermissions) -> config/manifests/rbac/role.yaml;
#   2. kustomize build config/manifests, with the manager image set to IMG,
#      | operator-sdk generate bundle (CSV install strategy, CRDs, alm-examples, metadata, scorecard);
#   3. hack/olmtool finalize: icon, description, pinned createdAt, olm.skipRange, containerImage,
#      relatedImages (operator-sdk would write the wall clock and omit the operator image) and
#      spec.replaces: the highest released version below VERSION.
#
# Released versions: each released bundle is frozen, exactly as released, in hack/bundles/v<version>/
# (hack/catalog.sh puts every one of them and bundle/ into the catalog). To release VERSION: bump
# VERSION in the Makefile, copy the previous bundle/ to hack/bundles/v<previous>/ first, then
# `make bundle catalog`.
# Everything is built in a temporary tree: a failed run leaves the working tree as it was, and
# `verify` compares exactly what `generate` would write. Nothing is normalised before comparing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"

: "${VERSION:?VERSION is not set (run through make)}" "${IMG:?IMG is not set}" "${PACKAGE:?PACKAGE is not set}"
: "${CHANNELS:?CHANNELS is not set}" "${DEFAULT_CHANNEL:?DEFAULT_CHANNEL is not set}" "${K8S_VERSION:?K8S_VERSION is not set}"

# Names used by config/manifests/rbac/role_binding.yaml.
readonly NAMESPACED_ROLE=kubeopera-operator-manager-namespaced-role
readonly CLUSTER_ROLE=kubeopera-operator-manager-cluster-role
# Namespaced resources granted cluster-wide anyway: none. Tenants are namespaced (test/crds holds
# the tenant-controller's CRD, not shipped in the bundle) and the manager reads them only in the
# app's namespace, so Tenant reads are `permissions`, namespaced in Single/MultiNamespace installs
# (issue 13; issue 6 had them in clusterPermissions). Add group/resource here to grant one.
readonly CLUSTER_WIDE=()
# Generated paths, relative to the repository root.
readonly OUTPUTS=(bundle bundle.Dockerfile config/manifests/rbac/role.yaml)

log() { echo "bundle.sh: $*" >&2; }

# replaces: the CSV name of the highest frozen release below VERSION (empty when there is none).
replaces() {
	local v prev=""
	for v in $(find hack/bundles -mindepth 1 -maxdepth 1 -type d -name 'v*' -printf '%f\n' 2>/dev/null | sed 's/^v//' | sort -V); do
		[[ $v == "$VERSION" ]] && break
		[[ $(printf '%s\n%s\n' "$v" "$VERSION" | sort -V | head -n1) == "$v" ]] && prev=$v
	done
	[[ -n $prev ]] && echo "$PACKAGE.v$prev"
	return 0
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# quiet CMD...: runs CMD, showing its output only when it fails.
quiet() {
	local out="$scratch/quiet.log"
	if ! "$@" >"$out" 2>&1; then
		cat "$out" >&2
		return 1
	fi
}

tools() {
	SDK=$(hack/tool.sh operator-sdk)/operator-sdk
	KUSTOMIZE=$(hack/tool.sh kustomize)/kustomize
	OLMTOOL=$scratch/olmtool
	[[ -x $OLMTOOL ]] || go build -o "$OLMTOOL" ./hack/olmtool
}

# render DIR: the whole recipe, into DIR (which gets config/, PROJECT, bundle/, bundle.Dockerfile).
render() {
	local out=$1 csv_base=config/manifests/bases/$PACKAGE.clusterserviceversion.yaml
	mkdir -p "$out"
	cp -R config PROJECT go.mod go.sum "$out/"
	local cluster_wide=()
	for gr in "${CLUSTER_WIDE[@]}"; do cluster_wide+=(-cluster-wide "$gr"); done
	"$OLMTOOL" rbac -in config/rbac/role.yaml -crds config/crd/bases -crds test/crds "${cluster_wide[@]}" \
		-namespaced-name "$NAMESPACED_ROLE" -cluster-name "$CLUSTER_ROLE" -out "$out/config/manifests/rbac/role.yaml"
	# operator-sdk generate kustomize manifests: refreshes the base CSV's owned-CRD list and the
	# config/manifests kustomization from PROJECT and config/. It is pointed at an empty API
	# directory because its bundled controller-tools cannot parse this project's CEL markers
	# (fieldPath/reason); the descriptors are kept in the hand-maintained base, which it preserves.
	mkdir -p "$out/.no-apis"
	(cd "$out" && quiet "$SDK" generate kustomize manifests -q --interactive=false --package "$PACKAGE" --apis-dir .no-apis)
	(cd "$out/config/manager" && "$KUSTOMIZE" edit set image "controller=$IMG")
	"$KUSTOMIZE" build "$out/config/manifests" >"$out/manifests.yaml"
	# operator-sdk reads the manifests from a pipe (not a redirected file) and writes bundle.Dockerfile
	# into its working directory.
	(cd "$out" && cat manifests.yaml | quiet "$SDK" generate bundle -q --overwrite --output-dir bundle \
		--package "$PACKAGE" --version "$VERSION" --channels "$CHANNELS" --default-channel "$DEFAULT_CHANNEL")
	"$OLMTOOL" finalize -csv "$out/bundle/manifests/$PACKAGE.clusterserviceversion.yaml" -base "$csv_base" \
		-icon config/manifests/icon.svg -description config/manifests/description.md -replaces "$(replaces)"
}

validate() {
	local report=$scratch/validate.json
	# Exit status 1 means errors, 0 allows warnings: the JSON report decides.
	"$SDK" bundle validate ./bundle --select-optional suite=operatorframework \
		--optional-values="k8s-version=$K8S_VERSION" -o json-alpha1 >"$report" 2>"$scratch/validate.log" || true
	if ! "$OLMTOOL" validation-report "$report"; then
		cat "$scratch/validate.log" >&2
		log "bundle validation failed"
		return 1
	fi
	echo "bundle: operator-sdk bundle validate passed with 0 errors and 0 warnings, known false positives aside (suite=operatorframework, k8s-version=$K8S_VERSION)"
}

generate() {
	local work=$scratch/tree
	render "$work"
	rm -rf bundle
	local p
	for p in "${OUTPUTS[@]}"; do
		cp -R "$work/$p" "$p"
	done
	echo "bundle: regenerated ${OUTPUTS[*]} ($PACKAGE v$VERSION, channels $CHANNELS, default $DEFAULT_CHANNEL)"
	validate
}

verify() {
	local work=$scratch/tree stale=0 p
	render "$work"
	for p in "${OUTPUTS[@]}"; do
		if ! diff -r -u "$p" "$work/$p" >"$scratch/diff" 2>&1; then
			log "stale: $p"
			head -n 60 "$scratch/diff" >&2
			stale=1
		fi
	done
	if ((stale)); then
		log "the committed bundle does not match its sources (CRDs, RBAC markers, config/manifests, samples, VERSION):"
		log "run 'make bundle catalog' and commit ${OUTPUTS[*]} catalog/ catalog.Dockerfile"
		return 1
	fi
	echo "bundle: ${OUTPUTS[*]} are up to date"
	validate
}

main() {
	local cmd=${1:-}
	case $cmd in
	generate | verify | validate)
		tools
		"$cmd"
		;;
	render)
		[[ -n ${2:-} ]] || {
			log "usage: hack/bundle.sh render DIR"
			exit 2
		}
		tools
		render "$2"
		;;
	*)
		log "usage: hack/bundle.sh generate|validate|verify|render DIR"
		exit 2
		;;
	esac
}

main "$@"
