#!/usr/bin/env bash
# Builds one development tool from the Go module proxy into a versioned user cache directory and
# prints that directory. A second call finds the stamp file and does nothing.
#
#   hack/tool.sh envtest|cluster|kwok|kubectl|flux|flux-crds|cert-manager|operator-sdk|opm|olm|controller-gen|kustomize|golangci-lint|govulncheck|cyclonedx-gomod|actionlint|crd-ref-docs|crane
#   hack/tool.sh --dir TOOL    # only print the directory
#
# Nothing here downloads a prebuilt binary: every tool is compiled from its Go module, either with
# `go install mod@version` or from a wrapper module under hack/tools/<name> (for tools whose own
# go.mod carries replace directives). TOOLS_CACHE_DIR overrides the cache root.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache_root=${TOOLS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubeopera-operator}
arch="$(go env GOOS)-$(go env GOARCH)"

# Versions. Bumping one changes the cache directory, so the old build is never reused by mistake.
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
# kwok plays nodes and pod lifecycles for the cluster test bed (internal/testbed).
KWOK_VERSION=v0.8.0
FLUX_SOURCE_VERSION=v1.9.6
FLUX_KUSTOMIZE_VERSION=v1.9.6
# cert-manager's Certificate CRD only (no binary): the App Controller's tests install it in a
# vCluster to read Certificates back as cert-manager writes them.
CERT_MANAGER_VERSION=v1.21.2
OPERATOR_SDK_VERSION=v1.34.1
OPM_VERSION=v1.65.0
# OLM (olm-operator and catalog-operator) for test/olminstall; the commit is the v0.40.0 tag's.
OLM_VERSION=v0.40.0
OLM_COMMIT=80eac74187141d4e7f6c4abae188025e44276473
CONTROLLER_GEN_VERSION=v0.23.0
KUSTOMIZE_VERSION=v5.8.2
GOLANGCI_LINT_VERSION=v2.15.0
GOVULNCHECK_VERSION=v1.9.0
# The SBOM generator of `make release` (CycloneDX, from the Go module graph).
CYCLONEDX_GOMOD_VERSION=v1.10.0
# The GitHub Actions workflow linter of `make check` (.github/workflows).
ACTIONLINT_VERSION=v1.7.12
# The API reference generator (docs/api), reading the Go types of api/.
CRD_REF_DOCS_VERSION=v0.3.0
# crane pushes the release's image index from its OCI layout (make release-publish); the same
# go-containerregistry version hack/release builds the image with.
CRANE_VERSION=v0.22.1
# The vulnerability database, as the golang.org/x/vulndb module (its data/osv); the pseudo-version's
# time is the database's "modified" time.
VULNDB_VERSION=v0.0.0-20261105234957-e22db6528018

export GOTOOLCHAIN=local GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false"

log() { echo "tool.sh: $*" >&2; }

# build_in_wrapper DIR OUT [go build args...]: builds tool packages of a wrapper module.
build_in_wrapper() {
	local dir=$1 out=$2
	shift 2
	(cd "$root/hack/tools/$dir" && go build -trimpath "$@")
}

# flux_crds OUT: the CRDs the Flux controllers serve, copied into OUT/crds from the same module
# versions the controllers are built from (nothing is compiled).
flux_crds() {
	local out=$1 m d
	mkdir -p "$out/crds"
	for m in "github.com/fluxcd/source-controller@$FLUX_SOURCE_VERSION" \
		"github.com/fluxcd/kustomize-controller@$FLUX_KUSTOMIZE_VERSION"; do
		d=$(cd "$root/hack/tools/flux" && go mod download -json "$m" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		cp "$d"/config/crd/bases/*.yaml "$out/crds/"
	done
	chmod u+w "$out"/crds/*.yaml
}

# k8s_ldflags: the version stamps of the Kubernetes binaries (kube-apiserver, kubectl).
k8s_ldflags() {
	local v=$K8S_VERSION minor ld="" p
	minor=${v#v1.}
	minor=${minor%%.*}
	for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
		ld+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor"
		ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$ld"
}

dir_for() {
	case $1 in
	envtest) echo "$cache_root/envtest/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-$arch" ;;
	cluster) echo "$cache_root/cluster/k8s-$K8S_VERSION-$arch" ;;
	kwok) echo "$cache_root/kwok/$KWOK_VERSION-$arch" ;;
	kubectl) echo "$cache_root/kubectl/$K8S_VERSION-$arch" ;;
	flux) echo "$cache_root/flux/source-$FLUX_SOURCE_VERSION-kustomize-$FLUX_KUSTOMIZE_VERSION-$arch" ;;
	flux-crds) echo "$cache_root/flux-crds/source-$FLUX_SOURCE_VERSION-kustomize-$FLUX_KUSTOMIZE_VERSION" ;;
	cert-manager) echo "$cache_root/cert-manager/$CERT_MANAGER_VERSION" ;;
	operator-sdk) echo "$cache_root/operator-sdk/$OPERATOR_SDK_VERSION-$arch" ;;
	opm) echo "$cache_root/opm/$OPM_VERSION-$arch" ;;
	olm) echo "$cache_root/olm/$OLM_VERSION-$arch" ;;
	controller-gen) echo "$cache_root/controller-gen/$CONTROLLER_GEN_VERSION-$arch" ;;
	kustomize) echo "$cache_root/kustomize/$KUSTOMIZE_VERSION-$arch" ;;
	golangci-lint) echo "$cache_root/golangci-lint/$GOLANGCI_LINT_VERSION-$arch" ;;
	govulncheck) echo "$cache_root/govulncheck/$GOVULNCHECK_VERSION-db-${VULNDB_VERSION##*-}-$arch" ;;
	cyclonedx-gomod) echo "$cache_root/cyclonedx-gomod/$CYCLONEDX_GOMOD_VERSION-$arch" ;;
	actionlint) echo "$cache_root/actionlint/$ACTIONLINT_VERSION-$arch" ;;
	crd-ref-docs) echo "$cache_root/crd-ref-docs/$CRD_REF_DOCS_VERSION-$arch" ;;
	crane) echo "$cache_root/crane/$CRANE_VERSION-$arch" ;;
	*)
		log "unknown tool '$1'"
		exit 2
		;;
	esac
}

build() {
	local tool=$1 out=$2
	case $tool in
	envtest)
		# The API server and etcd only: no suite of make test runs kubectl, which is its own tool.
		# etcd, a module of its own, builds beside the API server: the API server's module
		# downloads and its link (one thread) leave a core idle, which etcd's build fills.
		CGO_ENABLED=0 build_in_wrapper etcd "$out" -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3 &
		local etcd_pid=$! apiserver_rc=0
		CGO_ENABLED=0 build_in_wrapper envtest "$out" -ldflags "-s -w$(k8s_ldflags)" -o "$out/" \
			k8s.io/kubernetes/cmd/kube-apiserver || apiserver_rc=$?
		# Either failure fails the tool (set -e stops at a failed wait); etcd's build is waited
		# for even when the API server's failed, so none runs on behind the script.
		wait "$etcd_pid"
		return "$apiserver_rc"
		;;
	cluster)
		# The cluster's own machinery for the test bed, from the envtest wrapper module: the same
		# k8s.io/kubernetes version as the API server, so most packages come from its build cache.
		CGO_ENABLED=0 build_in_wrapper envtest "$out" -ldflags "-s -w$(k8s_ldflags)" -o "$out/" \
			k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
		;;
	kwok)
		# kwok's go.mod has no replace directives, so go install builds it as released.
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
			"sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
		;;
	kubectl)
		# kubectl (make install, deploy, undeploy; the installer suite), from the envtest wrapper
		# module: the same Kubernetes version as the API server, sharing its build cache. An envtest
		# build of an earlier version of this script holds the same binary: it is copied.
		local envtest
		envtest=$(dir_for envtest)
		if [[ -f $envtest/.complete && -x $envtest/kubectl ]]; then
			cp "$envtest/kubectl" "$out/kubectl"
		else
			CGO_ENABLED=0 build_in_wrapper envtest "$out" -ldflags "-s -w$(k8s_ldflags)" -o "$out/" k8s.io/kubernetes/cmd/kubectl
		fi
		;;
	flux)
		CGO_ENABLED=0 build_in_wrapper flux "$out" -ldflags "-s -w" -o "$out/" \
			github.com/fluxcd/source-controller github.com/fluxcd/kustomize-controller
		flux_crds "$out"
		;;
	flux-crds)
		# The Flux CRDs alone, for the suites that install them without running Flux: seconds,
		# where building the controllers takes minutes.
		flux_crds "$out"
		;;
	cert-manager)
		# The Certificate CRD of the cert-manager module's deploy/crds (plain CRD YAML, the
		# source of its Helm chart's CRDs), from the module proxy like every tool: nothing is built.
		mkdir -p "$out/crds"
		local d
		d=$(cd "$out" && go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		cp "$d/deploy/crds/cert-manager.io_certificates.yaml" "$out/crds/"
		chmod u+w "$out"/crds/*.yaml
		grep -q '^  name: certificates.cert-manager.io$' "$out/crds/cert-manager.io_certificates.yaml" || {
			log "no Certificate CRD in $d/deploy/crds"
			return 1
		}
		;;
	operator-sdk)
		local p=github.com/operator-framework/operator-sdk/internal/version
		local ld="-s -w -X $p.Version=$OPERATOR_SDK_VERSION -X $p.GitVersion=$OPERATOR_SDK_VERSION"
		ld+=" -X $p.KubernetesVersion=v1.28.5 -X $p.ImageVersion=$OPERATOR_SDK_VERSION"
		CGO_ENABLED=0 build_in_wrapper operator-sdk "$out" -ldflags "$ld" -o "$out/" \
			github.com/operator-framework/operator-sdk/cmd/operator-sdk \
			github.com/operator-framework/operator-sdk/images/scorecard-test
		;;
	opm)
		CGO_ENABLED=1 build_in_wrapper opm "$out" -tags json1,containers_image_openpgp -ldflags "-s -w" \
			-o "$out/opm" github.com/operator-framework/operator-registry/cmd/opm
		;;
	olm)
		local p=github.com/operator-framework/operator-lifecycle-manager/pkg/version
		CGO_ENABLED=0 build_in_wrapper olm "$out" -ldflags "-s -w -X $p.OLMVersion=${OLM_VERSION#v} -X $p.GitCommit=$OLM_COMMIT" \
			-o "$out/" github.com/operator-framework/operator-lifecycle-manager/cmd/olm \
			github.com/operator-framework/operator-lifecycle-manager/cmd/catalog
		# The eight OLM CRDs of the same module version (the packageserver is not installed).
		mkdir -p "$out/crds"
		local d
		d=$(cd "$root/hack/tools/olm" && go mod download -json "github.com/operator-framework/operator-lifecycle-manager@$OLM_VERSION" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		cp "$d"/deploy/chart/crds/*.crd.yaml "$out/crds/"
		chmod u+w "$out"/crds/*.yaml
		[[ $(find "$out/crds" -name '*.yaml' | wc -l) -eq 8 ]] || {
			log "expected the eight OLM CRDs in $d/deploy/chart/crds"
			return 1
		}
		;;
	controller-gen)
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath \
			"sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"
		;;
	kustomize)
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath \
			"sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
		;;
	golangci-lint)
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath \
			"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION"
		;;
	cyclonedx-gomod)
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath \
			"github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_GOMOD_VERSION"
		;;
	actionlint)
		# make workflows-lint runs it with its shellcheck and pyflakes integrations off: the
		# workflows' run steps are one make call each, with no shell of their own to check.
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
			"github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
		;;
	crd-ref-docs)
		# Its templates are embedded in the binary; docs/api/config.yaml and hack/api-docs are
		# the project's own templates.
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
			"github.com/elastic/crd-ref-docs@$CRD_REF_DOCS_VERSION"
		;;
	crane)
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" \
			"github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"
		;;
	govulncheck)
		GOFLAGS=-buildvcs=false GOBIN="$out" CGO_ENABLED=0 go install -trimpath \
			"golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"
		local src stamp
		src=$(go mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
		stamp=${VULNDB_VERSION#v0.0.0-}
		stamp=${stamp%%-*}
		(cd "$root" && go run ./hack/vulndb -src "$src/data/osv" -out "$out/db" \
			-modified "${stamp:0:4}-${stamp:4:2}-${stamp:6:2}T${stamp:8:2}:${stamp:10:2}:${stamp:12:2}Z")
		;;
	esac
}

# main is called on the last line, and exit on the same line, so bash never reads past it: the
# file can be edited while a build runs.
main() {
	if [[ ${1:-} == --dir ]]; then
		# Print where a tool lives (built or not) without building it.
		dir_for "${2:?usage: hack/tool.sh --dir TOOL}"
		exit 0
	fi
	local tool out start
	tool=${1:?usage: hack/tool.sh [--dir] TOOL}
	out=$(dir_for "$tool")
	if [[ -f "$out/.complete" ]]; then
		echo "$out"
		exit 0
	fi
	# One builder per tool at a time: a second caller waits, then finds the stamp.
	mkdir -p "$(dirname "$out")"
	exec 9>"$out.lock"
	flock 9
	if [[ -f "$out/.complete" ]]; then
		echo "$out"
		exit 0
	fi
	log "building $tool into $out (first time only; this can take several minutes on 2 cores)"
	rm -rf "$out.tmp"
	mkdir -p "$out.tmp"
	start=$SECONDS
	# Progress for humans while the compiler is silent.
	(while sleep 30; do log "still building $tool ($((SECONDS - start))s)"; done) &
	ticker_pid=$!
	trap 'kill "${ticker_pid:-}" 2>/dev/null || true' EXIT
	build "$tool" "$out.tmp"
	kill "$ticker_pid" 2>/dev/null || true
	touch "$out.tmp/.complete"
	rm -rf "$out"
	mv "$out.tmp" "$out"
	log "built $tool in $((SECONDS - start))s"
	echo "$out"
}

main "$@"; exit
