# kubeopera-operator: the ControlPlane and KubeOperaApp reconcilers in one manager.
#
# The README's two commands: `make run` and `make test`. Every tool is compiled from the Go module
# proxy by hack/tool.sh into a versioned user cache ($(TOOLS_CACHE_DIR)), so a fresh clone on a
# machine that built them before does no tool work at all.

# Version of the operator and of its OLM bundle.
VERSION ?= 0.2.0
# Registry and names of the images. The operator image is referenced by tag everywhere (CSV,
# config/manager, dist/install.yaml, the chart); `make release` prints its digest for pinning.
IMAGE_TAG_BASE ?= ghcr.io/kubeopera/kubeopera-operator
IMG ?= $(IMAGE_TAG_BASE):v$(VERSION)
BUNDLE_IMG ?= $(IMAGE_TAG_BASE)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMAGE_TAG_BASE)-catalog:v$(VERSION)
# OLM package and channels.
PACKAGE ?= kubeopera-operator
CHANNELS ?= stable,candidate
DEFAULT_CHANNEL ?= stable
# Kubernetes version the bundle claims and is validated against (the client libraries' version).
K8S_VERSION ?= 1.37

# Where the tools live; override TOOLS_CACHE_DIR to move the whole cache.
TOOLS_CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kubeopera-operator
export TOOLS_CACHE_DIR

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

# The Go toolchain is go.mod's toolchain line (fetched once from the module proxy when the local Go
# is older); the tools in hack/tool.sh build with the local Go.
export GOTOOLCHAIN = auto
export GOWORK = off
export GOFLAGS = -mod=readonly -buildvcs=false

tooldir = $(shell hack/tool.sh --dir $(1))
ENVTEST_ASSETS_DIR ?= $(call tooldir,envtest)
FLUX_BIN_DIR ?= $(call tooldir,flux)
FLUX_CRD_DIR ?= $(call tooldir,flux-crds)
CLUSTER_BIN_DIR ?= $(call tooldir,cluster)
KWOK_BIN_DIR ?= $(call tooldir,kwok)
CERT_MANAGER_DIR ?= $(call tooldir,cert-manager)
CONTROLLER_GEN = $(call tooldir,controller-gen)/controller-gen
KUSTOMIZE = $(call tooldir,kustomize)/kustomize
OPERATOR_SDK = $(call tooldir,operator-sdk)/operator-sdk
SCORECARD_TEST = $(call tooldir,operator-sdk)/scorecard-test
OPM = $(call tooldir,opm)/opm
GOLANGCI_LINT = $(call tooldir,golangci-lint)/golangci-lint
GOVULNCHECK_DIR = $(call tooldir,govulncheck)
# The project's kubectl (make install, deploy, undeploy); KUBECTL=kubectl uses your own.
KUBECTL ?= $(call tooldir,kubectl)/kubectl
CYCLONEDX_GOMOD = $(call tooldir,cyclonedx-gomod)/cyclonedx-gomod
ACTIONLINT = $(call tooldir,actionlint)/actionlint
CRANE = $(call tooldir,crane)/crane
# Container engine of docker-build and docker-push (make image needs none).
CONTAINER_TOOL ?= docker
# The commit stamped into the image (org.opencontainers.image.revision) and its time, which
# fixes the image's creation time, so the same commit always gives the same image digest.
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
export SOURCE_DATE_EPOCH

# Test timeout of one go test run (a tier's Go packages).
TEST_TIMEOUT ?= 30m

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show the targets and what they do.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-20s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate the CRDs, RBAC and the Tenant fixture CRD from markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./api/datasance/..." paths="./api/kubeopera/..." paths="./controllers/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) crd paths="./api/external/..." output:crd:artifacts:config=test/crds

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: verify-generated
verify-generated: ## Fail when committed CRDs, RBAC or DeepCopy code are stale.
	@hack/verify-generated.sh

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Run golangci-lint (config: .golangci.yml).
	$(GOLANGCI_LINT) run ./...

# Every stage of the tiers prints its time (hack/timed.sh).
TIMED = hack/timed.sh

# The tiers, with the ecosystem's names (docs/testing.md):
#   make test      the Go tests that fit a ten-minute edit loop: unit tests, the envtest suites of
#                  every package and the real Flux controllers of the App Controller's suite;
#   make test-e2e  the suites that start whole clusters (test/testbed: the real controllers,
#                  scheduler and kwok), run the operator's binary, kill it, or install it through
#                  OLM, the installer and the chart;
#   make check     the static and packaging checks: generated files, lint, vulnerabilities, the
#                  bundle, catalog, installer and chart, scorecard, the image, the fuzz budget;
#   make ci        all three and the release dry run: what CI runs (.ci/run).
# Each tier builds the tools it needs (two at a time; nothing when they are cached).
TEST_TOOLS = envtest-assets flux-crds cert-manager-crds
E2E_TOOLS = envtest-assets cluster kwok flux-controllers cert-manager-crds olm opm kustomize
CHECK_TOOLS = controller-gen golangci-lint govulncheck operator-sdk kustomize opm envtest-assets flux-crds actionlint crd-ref-docs

# The packages of `make test-e2e`; `make test` runs every other package of the module.
MODULE = github.com/kubeopera/kubeopera-operator
E2E_PACKAGES = $(MODULE)/test/e2e $(MODULE)/test/chaos $(MODULE)/test/olminstall $(MODULE)/test/sandbox \
	$(MODULE)/test/testbed $(MODULE)/test/metricsendpoint $(MODULE)/hack/devenv
TEST_PACKAGES = $(filter-out $(E2E_PACKAGES),$(shell go list ./...))

# Test binaries run at once (go test -p; empty: Go's default, the number of cores).
TEST_PARALLEL ?=
# Link flags of the test binaries: no DWARF (-w), which links them faster; a failing test's stack
# trace keeps its file:line (that comes from the symbol table, not from DWARF).
TEST_LDFLAGS ?= -w
# The vet checks go test runs on every package before its tests (-vet): make check runs them all,
# on the whole tree with the test files, in golangci-lint's govet, so the tiers do not analyse
# every package a second time. TEST_VET= brings go test's default back.
TEST_VET ?= off
# What the Go tests read to find the tools.
TEST_ENV = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" FLUX_BIN_DIR="$(FLUX_BIN_DIR)" FLUX_CRD_DIR="$(FLUX_CRD_DIR)" CERT_MANAGER_DIR="$(CERT_MANAGER_DIR)" \
	CLUSTER_BIN_DIR="$(CLUSTER_BIN_DIR)" KWOK_BIN_DIR="$(KWOK_BIN_DIR)"

.PHONY: test
test: git-cli ## Run the tests of the edit loop: unit, envtest and the App Controller's Flux suite, with -race.
	@$(TIMED) tools $(MAKE) --no-print-directory -j2 $(TEST_TOOLS)
	@$(TIMED) go-test env $(TEST_ENV) \
		go test -race $(if $(TEST_PARALLEL),-p $(TEST_PARALLEL)) $(if $(TEST_VET),-vet=$(TEST_VET)) -ldflags=$(TEST_LDFLAGS) $(TEST_PACKAGES) -count=1 -timeout $(TEST_TIMEOUT)

# The manager binary the end-to-end suites run, built once per `make test-e2e` with the race
# detector (testenv.BuildManager uses it; a suite fails on a race report in the manager's log).
E2E_MANAGER = bin/e2e/kubeopera-operator

.PHONY: test-e2e
test-e2e: git-cli ## Run the end-to-end suites: the test bed, the sandbox, chaos, OLM, the installer and chart, monitoring.
	@$(TIMED) e2e-tools $(MAKE) --no-print-directory -j2 $(E2E_TOOLS)
	@# No -trimpath: the binary shares the build cache of the -race test binaries.
	@$(TIMED) e2e-manager go build -race -o $(E2E_MANAGER) .
	@$(TIMED) e2e-go-test env $(TEST_ENV) MANAGER_BIN="$(CURDIR)/$(E2E_MANAGER)" \
		go test -race $(if $(TEST_PARALLEL),-p $(TEST_PARALLEL)) $(if $(TEST_VET),-vet=$(TEST_VET)) -ldflags=$(TEST_LDFLAGS) $(E2E_PACKAGES) -count=1 -timeout $(TEST_TIMEOUT)
	@$(TIMED) monitoring $(MAKE) --no-print-directory test-monitoring
	@$(TIMED) install env MANAGER_BIN="$(CURDIR)/$(E2E_MANAGER)" $(MAKE) --no-print-directory test-install

.PHONY: check
check: ## Run the static and packaging checks (generated files, lint, vulncheck, bundle, catalog, installer, scorecard, workflows, API reference, chart, image, fuzz).
	@$(TIMED) check-tools $(MAKE) --no-print-directory -j2 $(CHECK_TOOLS)
	@$(TIMED) verify-generated $(MAKE) --no-print-directory verify-generated
	@# golangci-lint's govet runs go vet's analyzers, so there is no separate vet stage.
	@$(TIMED) lint $(MAKE) --no-print-directory lint
	@$(TIMED) olm-checks $(MAKE) --no-print-directory vulncheck bundle-verify catalog-verify installer-verify scorecard
	@$(TIMED) shipping-checks $(MAKE) --no-print-directory workflows-lint api-docs-verify chart-verify
	@$(TIMED) image $(MAKE) --no-print-directory test-image
	@$(TIMED) fuzz $(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME) FUZZTIME_APISERVER=$(TEST_FUZZTIME_APISERVER)

.PHONY: ci
ci: ## Run every tier and the release dry run (what CI runs).
	@$(TIMED) test $(MAKE) --no-print-directory test
	@$(TIMED) test-e2e $(MAKE) --no-print-directory test-e2e
	@$(TIMED) check $(MAKE) --no-print-directory check
	@$(TIMED) release-dry-run $(MAKE) --no-print-directory release-dry-run

# Fuzz time per target of `make fuzz` (`make fuzz FUZZTIME=5m` for a longer run), and the short
# fixed budget `make check` gives each target: a count of inputs, so that its cost does not
# depend on the machine's load and Go 1.26's fuzztime deadline race (golang/go#75804, a spurious
# "context deadline exceeded" at the end of a duration) cannot fail it. Every target's seed
# corpus also runs in the plain `go test`.
FUZZTIME ?= 10s
TEST_FUZZTIME ?= 2000x
TEST_FUZZTIME_APISERVER ?= 150x

.PHONY: fuzz
fuzz: envtest-assets flux-crds ## Run every Go fuzz target for FUZZTIME each (seed corpora: f.Add and testdata/fuzz).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" FLUX_CRD_DIR="$(FLUX_CRD_DIR)" FUZZTIME=$(FUZZTIME) hack/fuzz.sh

# Fuzz time of each rendered-objects dry-run target (internal/render, controlplane resources) in `make dryrun-long`.
DRYRUN_FUZZTIME ?= 10m

.PHONY: dryrun-long
dryrun-long: envtest-assets flux-crds ## Rendered objects vs server-side dry run: the two fuzz targets for DRYRUN_FUZZTIME each.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" FLUX_CRD_DIR="$(FLUX_CRD_DIR)" FUZZTIME_APISERVER=$(DRYRUN_FUZZTIME) \
		hack/fuzz.sh internal/render controllers/controlplane/internal/resources

.PHONY: vulncheck
vulncheck: govulncheck ## Report known vulnerabilities reachable from the code (database pinned in hack/tool.sh).
	$(GOVULNCHECK_DIR)/govulncheck -db file://$(GOVULNCHECK_DIR)/db ./...

.PHONY: test-install
test-install: envtest-assets kustomize kubectl ## Install dist/install.yaml and the Helm chart on a real API server and run the manager with their RBAC (module test/install).
	cd test/install && KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" KUBECTL_BIN="$(KUBECTL)" go test ./... -count=1 -timeout $(TEST_TIMEOUT)

.PHONY: test-image
test-image: envtest-assets ## Build the OCI image of `make image` and read it back: contents, labels, both platforms, the binary answering /healthz (module hack/release).
	cd hack/release && KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" go test ./... -count=1 -timeout $(TEST_TIMEOUT)

.PHONY: test-monitoring
test-monitoring: envtest-assets git-cli ## Evaluate the alerts and check the dashboard against a real run (module test/monitoring).
	cd test/monitoring && KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" go test ./... -count=1 -timeout $(TEST_TIMEOUT)

# Trials per scenario of `make chaos` (make test-e2e runs the default of test/chaos, 2); CHAOS_SEED
# repeats a run (the seed is printed).
CHAOS_TRIALS ?= 50

.PHONY: chaos
chaos: envtest-assets cluster kwok flux-controllers git-cli ## Kill the manager at seeded random moments (CHAOS_TRIALS per scenario, CHAOS_SEED to repeat).
	$(TEST_ENV) CHAOS_TRIALS=$(CHAOS_TRIALS) \
		go test ./test/chaos -count=1 -v -timeout 60m -run 'TestKillAnywhere'

.PHONY: test-fast
test-fast: envtest-assets flux-controllers flux-crds cert-manager-crds git-cli ## The edit loop: vet and test (no -race) the changed packages and their direct importers (FAST_BASE, default HEAD).
	$(TEST_ENV) hack/test-fast.sh

# Runs per test of `make flake-check`.
FLAKE_COUNT ?= 5

.PHONY: flake-check
flake-check: envtest-assets cluster kwok flux-controllers flux-crds cert-manager-crds git-cli ## Run the time-window tests FLAKE_COUNT times under -race with the CPU loaded; report runs and failures.
	$(TEST_ENV) FLAKE_COUNT=$(FLAKE_COUNT) hack/flake-check.sh

.PHONY: test-unit
test-unit: ## Run only the tests that need no tools (pure packages).
	go test -short ./...

# The benchmark harness (test/bench): real API servers, the operator process, fake Controllers,
# the test Git server and Flux; it reports and never fails on a missed goal (bench-check does).
BENCH_ENV = KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" FLUX_BIN_DIR="$(FLUX_BIN_DIR)"

.PHONY: bench
bench: envtest-assets flux-controllers git-cli ## Run the benchmarks (full, about 18 min on 2 cores, 9 of them P5, 1.5 P6); rewrites docs/benchmarks.md and .json.
	$(BENCH_ENV) go run ./test/bench $(BENCH_ARGS)

.PHONY: bench-quick
bench-quick: envtest-assets flux-controllers git-cli ## Run the benchmarks at small sizes (a few minutes); writes bin/benchmarks-quick.md.
	$(BENCH_ENV) go run ./test/bench -quick $(BENCH_ARGS)

.PHONY: bench-check
bench-check: ## Compare the last full run (docs/benchmarks.json) with the goals; exit 1 when one is missed.
	go run ./test/bench -check docs/benchmarks.json

.PHONY: bench-micro
bench-micro: envtest-assets ## Run the Go micro-benchmarks (builders).
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS_DIR)" go test -run '^$$' -bench . -benchmem ./...

# The chart tests that need no API server (Helm's lint in strict mode, templates with every value
# and with global values, the schema, the chart against the installer); make test-install runs
# them too, with the rest of test/install.
CHART_STATIC_TESTS = ^(TestChartStatic|TestChartMatchesInstaller|TestImageReferenceIsTheSameEverywhere)

.PHONY: chart-verify
chart-verify: ## Lint the Helm chart strictly and render it with every value (module test/install, no API server).
	cd test/install && go test -run '$(CHART_STATIC_TESTS)' ./... -count=1 -timeout $(TEST_TIMEOUT)

.PHONY: workflows-lint
workflows-lint: actionlint ## Check the GitHub Actions workflows (.github/workflows) with actionlint.
	@# shellcheck and pyflakes off: a run step is one make call, and the result must not depend on
	@# what else the machine has installed.
	$(ACTIONLINT) -no-color -shellcheck= -pyflakes=

.PHONY: api-docs
api-docs: crd-ref-docs ## Regenerate the API reference docs/api/<kind>.md from the Go types of api/ (crd-ref-docs).
	@hack/api-docs.sh generate

.PHONY: api-docs-verify
api-docs-verify: crd-ref-docs ## Fail when the API reference in docs/api is stale.
	@hack/api-docs.sh verify

##@ Build

.PHONY: build
build: ## Build the manager binary into bin/kubeopera-operator.
	go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/kubeopera-operator .

.PHONY: run
run: ## Run the operator against $KUBECONFIG, or the local sandbox (docs/sandbox.md) when none is reachable.
	@# Built, not `go run`: go run exits 1 on Ctrl-C, which make reports as an error. The sandbox's
	@# tools (API servers, cluster, kwok, Flux) are built by devenv only when it starts the sandbox.
	go build -o bin/devenv ./hack/devenv
	bin/devenv $(RUN_ARGS)

# The platforms of `make image` (both, as an index); PLATFORMS=linux/amd64 for a quicker build.
PLATFORMS ?= linux/amd64,linux/arm64

.PHONY: image
image: ## Build the operator's OCI image (PLATFORMS, as one index) without a container engine: bin/image (OCI layout) and bin/kubeopera-operator-v$(VERSION).oci.tar.
	cd hack/release && go run . image -root ../.. -version $(VERSION) -revision "$(REVISION)" -platforms $(PLATFORMS) \
		-out ../../bin/image -archive ../../bin/kubeopera-operator-v$(VERSION).oci.tar

.PHONY: docker-build
docker-build: ## Build the operator image with a container engine from the Dockerfile (CONTAINER_TOOL, default docker).
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the image docker-build built.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: build-installer
build-installer: kustomize ## Regenerate dist/install.yaml and the generated parts of the Helm chart dist/chart (after make manifests bundle).
	@VERSION=$(VERSION) IMG=$(IMG) hack/installer.sh generate

.PHONY: installer-verify
installer-verify: kustomize ## Fail when dist/install.yaml or dist/chart is stale.
	@VERSION=$(VERSION) IMG=$(IMG) hack/installer.sh verify

##@ Deployment

.PHONY: install
install: kustomize kubectl ## Install the CRDs into the cluster of $KUBECONFIG.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) apply --server-side -f -

.PHONY: uninstall
uninstall: kustomize kubectl ## Remove the CRDs (and every ControlPlane and KubeOperaApp) from the cluster.
	$(KUSTOMIZE) build config/crd | $(KUBECTL) delete --ignore-not-found -f -

.PHONY: deploy
deploy: kustomize kubectl ## Deploy the operator (image $(IMG)) to the cluster: the installer, rendered into bin/install.yaml.
	@mkdir -p bin
	@VERSION=$(VERSION) IMG=$(IMG) hack/installer.sh render bin/install.yaml
	$(KUBECTL) apply --server-side -f bin/install.yaml

.PHONY: undeploy
undeploy: kubectl ## Remove the operator from the cluster; the CRDs, ControlPlanes, KubeOperaApps and their data stay.
	KUBECTL=$(KUBECTL) hack/installer.sh uninstall

##@ OLM bundle and catalog

# What the OLM scripts read (hack/bundle.sh, hack/catalog.sh, hack/scorecard.sh).
OLM_ENV = VERSION=$(VERSION) IMG=$(IMG) BUNDLE_IMG=$(BUNDLE_IMG) PACKAGE=$(PACKAGE) CHANNELS=$(CHANNELS) \
	DEFAULT_CHANNEL=$(DEFAULT_CHANNEL) K8S_VERSION=$(K8S_VERSION)

.PHONY: bundle
bundle: manifests kustomize operator-sdk ## Regenerate bundle/ and bundle.Dockerfile, then validate.
	@$(OLM_ENV) hack/bundle.sh generate

.PHONY: bundle-validate
bundle-validate: operator-sdk ## Validate bundle/ with operator-sdk (operatorframework suite; 0 errors, 0 warnings).
	@$(OLM_ENV) hack/bundle.sh validate

.PHONY: bundle-verify
bundle-verify: manifests kustomize operator-sdk ## Fail when bundle/ is stale or invalid.
	@$(OLM_ENV) hack/bundle.sh verify

.PHONY: bundle-build
bundle-build: ## Print the bundle image build command (no container engine here).
	@echo "docker build -f bundle.Dockerfile -t $(BUNDLE_IMG) ."

.PHONY: catalog
catalog: opm ## Regenerate the file-based catalog catalog/$(PACKAGE) from bundle/.
	@$(OLM_ENV) hack/catalog.sh generate

.PHONY: catalog-validate
catalog-validate: opm ## Validate the catalog with opm and check every image is filled in.
	@$(OLM_ENV) hack/catalog.sh validate

.PHONY: catalog-verify
catalog-verify: opm ## Fail when the catalog is stale (released bundles in hack/bundles + bundle/) or invalid.
	@$(OLM_ENV) hack/catalog.sh verify

.PHONY: catalog-build
catalog-build: ## Print the catalog image build command (no container engine here).
	@echo "docker build -f catalog.Dockerfile -t $(CATALOG_IMG) ."

.PHONY: scorecard
scorecard: operator-sdk ## Run the six basic and OLM scorecard tests locally against bundle/.
	@$(OLM_ENV) hack/scorecard.sh

.PHONY: test-olm
test-olm: envtest-assets olm opm ## Install and upgrade the bundle through the real OLM (test/olminstall).
	go test ./test/olminstall/ -count=1 -v -timeout $(TEST_TIMEOUT)

##@ Release (docs/release.md; the release workflow runs release-artifacts, -publish, -sign, -github)

.PHONY: release
release: kustomize operator-sdk opm controller-gen cyclonedx-gomod ## Release VERSION: changelog, bundle (frozen in hack/bundles), catalog, installers, image, SBOM, checksums in bin/release/; prints what to push and sign.
	@VERSION=$(VERSION) IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) REVISION=$(REVISION) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) hack/release.sh

# Platforms of the dry run's image (make release builds both).
RELEASE_DRY_RUN_PLATFORMS ?= linux/amd64,linux/arm64

.PHONY: release-dry-run
release-dry-run: kustomize operator-sdk opm controller-gen cyclonedx-gomod ## make release of VERSION in a copy of the working tree (CI): the tree is left unchanged.
	@RELEASE_DRY_RUN=1 RELEASE_PLATFORMS=$(RELEASE_DRY_RUN_PLATFORMS) VERSION=$(VERSION) IMAGE_TAG_BASE=$(IMAGE_TAG_BASE) \
		REVISION=$(REVISION) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) hack/release.sh

# A tag, when given (the release workflow passes the pushed tag), must name VERSION.
RELEASE_TAG ?=
RELEASE_ENV = VERSION=$(VERSION) IMAGE_TAG_BASE=$(IMAGE_TAG_BASE)

.PHONY: release-artifacts
release-artifacts: cyclonedx-gomod ## Build the artifacts of the released tree (the tag's commit) in bin/release/v$(VERSION): image, pinned bundle/catalog/installer/chart, SBOM, SHA256SUMS.
	@[[ -z "$(RELEASE_TAG)" || "$(RELEASE_TAG)" == "v$(VERSION)" ]] || { echo "tag $(RELEASE_TAG) is not v$(VERSION) (the Makefile's VERSION)" >&2; exit 1; }
	@$(RELEASE_ENV) RELEASE_PLATFORMS=$(PLATFORMS) REVISION=$(REVISION) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) hack/release.sh artifacts

.PHONY: release-publish
release-publish: crane ## Push the image index, the bundle and catalog images and the chart of bin/release/v$(VERSION) (needs registry credentials, docker buildx, helm).
	@$(RELEASE_ENV) CRANE=$(CRANE) hack/publish.sh push

.PHONY: release-sign
release-sign: ## Sign what release-publish pushed with cosign (keyless) and attest the SBOM; sign SHA256SUMS.
	@$(RELEASE_ENV) hack/publish.sh sign

.PHONY: release-github
release-github: ## Create the GitHub release v$(VERSION) with its notes (CHANGELOG.md) and files (gh).
	@$(RELEASE_ENV) hack/publish.sh github

.PHONY: release-outputs
release-outputs: ## Print the digests release-publish recorded, as name=value lines (the workflow's step outputs).
	@$(RELEASE_ENV) hack/publish.sh outputs

##@ Tools (built from the Go module proxy, cached in $(TOOLS_CACHE_DIR))

.PHONY: actionlint
actionlint: ## Build actionlint (make workflows-lint).
	@hack/tool.sh actionlint >/dev/null

.PHONY: crd-ref-docs
crd-ref-docs: ## Build crd-ref-docs (make api-docs).
	@hack/tool.sh crd-ref-docs >/dev/null

.PHONY: crane
crane: ## Build crane (make release-publish).
	@hack/tool.sh crane >/dev/null

.PHONY: kubectl
kubectl: ## Build kubectl (from the envtest module, sharing the API server's build cache).
	@hack/tool.sh kubectl >/dev/null

.PHONY: cyclonedx-gomod
cyclonedx-gomod: ## Build cyclonedx-gomod (the SBOM of make release).
	@hack/tool.sh cyclonedx-gomod >/dev/null

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd for envtest.
	@hack/tool.sh envtest >/dev/null

.PHONY: cluster
cluster: ## Build kube-controller-manager and kube-scheduler for the test bed (test/testbed).
	@hack/tool.sh cluster >/dev/null

.PHONY: kwok
kwok: ## Build kwok, which plays the test bed's nodes and pods.
	@hack/tool.sh kwok >/dev/null

.PHONY: flux-controllers
flux-controllers: ## Build the Flux source-controller and kustomize-controller (end-to-end test).
	@hack/tool.sh flux >/dev/null

.PHONY: flux-crds
flux-crds: ## Extract the Flux CRDs from the Flux controllers' Go modules (App Controller tests, fuzz; nothing is built).
	@hack/tool.sh flux-crds >/dev/null

.PHONY: cert-manager-crds
cert-manager-crds: ## Extract cert-manager's Certificate CRD from its Go module (App Controller tests).
	@hack/tool.sh cert-manager >/dev/null

.PHONY: controller-gen
controller-gen: ## Build controller-gen.
	@hack/tool.sh controller-gen >/dev/null

.PHONY: kustomize
kustomize: ## Build kustomize.
	@hack/tool.sh kustomize >/dev/null

.PHONY: operator-sdk
operator-sdk: ## Build operator-sdk and scorecard-test.
	@hack/tool.sh operator-sdk >/dev/null

.PHONY: opm
opm: ## Build opm.
	@hack/tool.sh opm >/dev/null

.PHONY: olm
olm: ## Build OLM's olm-operator and catalog-operator and fetch the OLM CRDs (test/olminstall).
	@hack/tool.sh olm >/dev/null

.PHONY: golangci-lint
golangci-lint: ## Build golangci-lint.
	@hack/tool.sh golangci-lint >/dev/null

.PHONY: govulncheck
govulncheck: ## Build govulncheck and its vulnerability database (from the golang.org/x/vulndb module).
	@hack/tool.sh govulncheck >/dev/null

.PHONY: tools
tools: ## Build every tool (two at a time; kubectl last, on the envtest build's cache).
	@$(MAKE) --no-print-directory -j2 $(sort $(TEST_TOOLS) $(E2E_TOOLS) $(CHECK_TOOLS)) cyclonedx-gomod crane
	@$(MAKE) --no-print-directory kubectl

.PHONY: git-cli
git-cli: ## Check that the git CLI is installed (the test Git server needs it); say how to install it when not.
	@command -v git >/dev/null || { echo "git is missing: install it (Debian, Ubuntu: sudo apt-get install git; Fedora: sudo dnf install git)" >&2; exit 1; }
