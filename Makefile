# myoperator: build, generate, test and deploy. `make help` lists every target.

# Image to build, push and deploy (config/manager names the same one): the
# newest release's tag, which make release moves.
IMAGE_REPO ?= ghcr.io/example/myoperator
IMG ?= $(IMAGE_REPO):v0.2.0
# The version the binaries carry and the multi-arch images are tagged with:
# hack/version derives it from RELEASES.md and git (v0.1.0 for the release's
# own tree, v0.1.0-<commits since>-g<commit>[-dirty] after it). Evaluated
# once, and only by the targets that use it.
VERSION ?= $(eval VERSION := $$(shell go run ./hack/version))$(VERSION)
COMMIT ?= $(eval COMMIT := $$(shell git rev-parse HEAD 2>/dev/null || echo unknown))$(COMMIT)

# Pinned versions: everything the project builds or runs is named here once.
KUBE_VERSION ?= v1.37.2
# The oldest Kubernetes the operator supports (docs/install.md: "Supported Kubernetes
# versions"); make test-k8s-oldest runs the envtest suites on it.
KUBE_OLDEST_VERSION ?= v1.33.13
# Every supported Kubernetes minor, oldest to newest, each at the patch its
# hack/k8s module pins (hack/build-k8s.sh); make test-k8s-matrix runs the
# envtest suites on each.
KUBE_MATRIX_VERSIONS ?= v1.33.13 v1.34.12 v1.35.8 v1.36.5 v1.37.2
KWOK_VERSION ?= v0.8.0
CONTROLLER_GEN_VERSION ?= v0.23.0
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
GOLANGCI_LINT_VERSION ?= v2.15.0
KUBE_SCORE_VERSION ?= v1.20.0
# deadcode (golang.org/x/tools) finds shipped code that no binary reaches.
DEADCODE_VERSION ?= v0.52.0
# Helm, built from helm.sh/helm/v4, for the chart's tests and make dist.
HELM_VERSION ?= v4.3.1
# cert-manager's version is the one hack/certmanager/go.mod requires (the
# launcher's module); it names the launcher's folder.
CERT_MANAGER_VERSION := $(shell awk '$$1 == "github.com/cert-manager/cert-manager" {print $$2}' hack/certmanager/go.mod)
# promtool's version is that of the Prometheus module hack/promtool/go.mod
# requires (v0.316.0 is Prometheus 3.16.0); it names the binary.
PROMTOOL_VERSION := $(shell awk '$$1 == "github.com/prometheus/prometheus" {print $$2}' hack/promtool/go.mod)

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT := $(abspath .)
BIN := $(ROOT)/bin
# Real Kubernetes binaries, built from Go modules into a versioned folder.
K8S_BIN := $(BIN)/k8s/$(KUBE_VERSION)
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
CYCLONEDX_GOMOD := $(BIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)
GOLANGCI_LINT := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
CERT_MANAGER := $(BIN)/cert-manager-$(CERT_MANAGER_VERSION)/cert-manager
KUBE_SCORE := $(BIN)/kube-score-$(KUBE_SCORE_VERSION)
HELM := $(BIN)/helm-$(HELM_VERSION)
PROMTOOL := $(BIN)/promtool-$(PROMTOOL_VERSION)
DEADCODE := $(BIN)/deadcode-$(DEADCODE_VERSION)
KUBECTL ?= kubectl
# The shipped packages: what the four binaries are built from.
SHIPPED_RE := github.com/example/myoperator(/(apis|internal|reconcile|bootstrap|initcontainer|guestbookserver|kubectl-myoperator)(/.*)?)?$$
# Every API server a target starts runs in this network namespace, which has
# no route off the machine (see hack/netns.sh).
NETNS ?= myoperator-test
IN_NETNS := $(ROOT)/hack/netns.sh $(NETNS)

export KUBEBUILDER_ASSETS := $(K8S_BIN)

##@ General

.PHONY: help
help: ## Show every target with one line each.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Demo

.PHONY: demo
demo: ## The operator from its image on a local kwok cluster, samples applied, summary printed (as root; a second run reuses it).
	@hack/demo.sh preflight
	@$(MAKE) --no-print-directory k8s-binaries build
	@K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/demo.sh up

.PHONY: demo-down
demo-down: ## Remove everything make demo started: pod runner, containers, cluster, bin/demo.
	@K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/demo.sh down

.PHONY: test-demo
test-demo: ## make demo twice (the second reuses everything), its printed kubectl commands, make demo-down leaving nothing behind.
	NETNS=$(NETNS) hack/test-demo.sh

##@ Development

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs (config/crd/bases), webhook configurations (config/webhook) and RBAC (config/rbac) from markers.
	$(CONTROLLER_GEN) crd paths="./apis/..." output:crd:artifacts:config=config/crd/bases
	@# The Drink webhook validates every version's writes against the v1 rules of this CRD, embedded in the binary.
	cp config/crd/bases/example.com_drinks.yaml internal/crdvalidation/example.com_drinks.yaml
	$(CONTROLLER_GEN) webhook paths="./internal/webhook/..." output:webhook:artifacts:config=config/webhook
	@# The packages with +kubebuilder:rbac markers, not ./...: controller-gen would also load the tools' own modules under
	@# hack/, which need modules that make deploy (run offline by the e2e suite) may not have downloaded.
	$(CONTROLLER_GEN) rbac:roleName=myoperator-manager-role paths="./internal/...;./reconcile/...;./bootstrap/..." output:rbac:artifacts:config=config/rbac

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code (zz_generated.*) for the APIs.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./apis/..."

# The version of bundle/'s CSV; empty: the newest release of RELEASES.md
# (0.1.0 until that file exists).
BUNDLE_VERSION ?=

.PHONY: chart
chart: manifests ## Generate the Helm chart charts/myoperator from config/ (hack/helmchart): its default values render config/default.
	go run ./hack/helmchart

.PHONY: bundle
bundle: manifests ## Generate the OLM bundle (bundle/, bundle.Dockerfile) from config/, versioned as the newest release of RELEASES.md.
	go run ./hack/bundle $(if $(BUNDLE_VERSION),--version $(BUNDLE_VERSION))

.PHONY: bundle-release
bundle-release: manifests ## Write the frozen OLM bundle of a new release into bundle/releases/vVERSION (VERSION=x.y.z or x.y.z-rc.n; refuses an existing one).
	@# VERSION always has a value (the tree's, from hack/version): only one given to make names a release.
	@case "$(origin VERSION)" in "command line"|environment) ;; *) echo "bundle-release: set VERSION=x.y.z or x.y.z-rc.n"; exit 1;; esac
	go run ./hack/bundle --release $(VERSION)

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet on the code.
	go vet ./...

.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yml, also on the tools' own modules (hack/olm-validate, hack/certmanager, hack/promtool, hack/registry).
	$(GOLANGCI_LINT) run ./...
	@# Modules of their own, which ./... does not reach.
	cd hack/olm-validate && $(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml ./...
	cd hack/certmanager && $(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml ./...
	cd hack/promtool && $(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml ./...
	cd hack/registry && $(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml ./...

.PHONY: kube-score
kube-score: $(KUBE_SCORE) ## Score the rendered config/default (and with config/network-policy, config/namespace-scope) with kube-score; fail on any CRITICAL.
	hack/kube-score.sh $(KUBE_SCORE)

.PHONY: verify
verify: $(DEADCODE) ## Fail on drift: regenerated code and manifests, gofmt, go.mod, shipped binaries linking test code, shipped code no binary reaches, stale file references, long commit subjects.
	@mkdir -p $(BIN) && hack/tree-digest.sh > $(BIN)/.verify-before
	@$(MAKE) --no-print-directory generate manifests bundle chart reliability-doc flag-doc
	@hack/tree-digest.sh > $(BIN)/.verify-after
	@if ! diff -q $(BIN)/.verify-before $(BIN)/.verify-after >/dev/null; then \
		diff $(BIN)/.verify-before $(BIN)/.verify-after | grep '^[<>]' | awk '{print $$NF}' | sort -u | sed 's/^/  changed by regeneration: /' || true; \
		echo "verify: generated files differed from their sources (now regenerated; review with git diff and commit)"; exit 1; fi
	@gofmt -s -l $$(git ls-files '*.go') | (! grep .) || { echo "verify: gofmt -s would change the files above; run make fmt"; exit 1; }
	@# make manifests reads RBAC markers from these packages only.
	@if git grep -l '+kubebuilder:rbac' -- '*.go' ':!internal/' ':!reconcile/' ':!bootstrap/'; then echo "verify: RBAC markers in the files above, outside the paths make manifests reads; add their packages there"; exit 1; fi
	@# The shipped binaries link only the product's packages (hack/check-deps.sh).
	@hack/check-deps.sh
	@# Shipped code that none of the four binaries reaches (only tests or tooling would) is dead: delete it, or move a test's helper into its export_test.go.
	@out=$$($(DEADCODE) -filter '^$(SHIPPED_RE)' . ./initcontainer ./guestbookserver ./kubectl-myoperator) && [ -z "$$out" ] || { echo "$$out"; echo "verify: shipped code above is reached by no binary (deadcode)"; exit 1; }
	@# Every file a document or Go comment cites exists, and none cites an issue number.
	@go run ./hack/checkrefs
	@# Commit subjects of at most 72 characters, from the commit that added the check on.
	@hack/check-commits.sh
	@go mod tidy -diff >/dev/null || { echo "verify: go.mod/go.sum are not tidy; run go mod tidy"; exit 1; }
	@# OLM's own validators (operator-framework/api, kept in its own module) on bundle/ and every released bundle, the upgrade graph they form, and their tests.
	@cd hack/olm-validate && go mod tidy -diff >/dev/null || { echo "verify: hack/olm-validate's go.mod/go.sum are not tidy; run go mod tidy there"; exit 1; }
	@cd hack/certmanager && go mod tidy -diff >/dev/null || { echo "verify: hack/certmanager's go.mod/go.sum are not tidy; run go mod tidy there"; exit 1; }
	@cd hack/promtool && go mod tidy -diff >/dev/null || { echo "verify: hack/promtool's go.mod/go.sum are not tidy; run go mod tidy there"; exit 1; }
	@cd hack/registry && go mod tidy -diff >/dev/null || { echo "verify: hack/registry's go.mod/go.sum are not tidy; run go mod tidy there"; exit 1; }
	@go -C hack/olm-validate build -o $(BIN)/olm-validate .
	@$(BIN)/olm-validate --k8s-version $(KUBE_VERSION:v%=%) bundle $(wildcard bundle/releases/v*)
	@cd hack/olm-validate && go test -count=1 ./... | grep -v 'no test files' | sed 's/^/verify: olm-validate tests: /'
	@# The release's image push (hack/registry, its own module) against a registry on loopback.
	@cd hack/registry && go test -count=1 ./... | sed 's/^/verify: registry tests: /'
	@echo "verify: generated files, formatting and go.mod are up to date"

##@ Build

HOST_ARCH := $(shell go env GOARCH)
# The platforms of the multi-arch image: pure Go, cross-compiled, nothing emulated.
PLATFORMS ?= linux/amd64 linux/arm64
VERSION_PKG := github.com/example/myoperator/internal/version
# GUESTBOOK_DEFAULT_IMAGE, when set, is compiled into the manager as the
# Guestbook's default image (a release stamps its image by digest there).
GUESTBOOK_DEFAULT_IMAGE ?=
MANAGER_LDFLAGS = $(if $(GUESTBOOK_DEFAULT_IMAGE),-X github.com/example/myoperator/apis/operator/v1alpha1.DefaultGuestbookImage=$(GUESTBOOK_DEFAULT_IMAGE))
# build-for,ARCH: the operator's two binaries, the Guestbook's server
# (guestbook.Dockerfile's) and the kubectl plugin (kubectl-myoperator,
# docs/plugin.md) for linux/ARCH into bin/linux_ARCH/, stamped.
define build-for
GOOS=linux GOARCH=$(1) CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) $(MANAGER_LDFLAGS)" -o $(BIN)/linux_$(1)/manager .
GOOS=linux GOARCH=$(1) CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)" -o $(BIN)/linux_$(1)/bootstrap ./initcontainer
GOOS=linux GOARCH=$(1) CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)" -o $(BIN)/linux_$(1)/guestbook-server ./guestbookserver
GOOS=linux GOARCH=$(1) CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)" -o $(BIN)/linux_$(1)/kubectl-myoperator ./kubectl-myoperator
endef

.PHONY: build
build: ## Build the manager, bootstrap, guestbook-server and kubectl-myoperator binaries (static, stamped with VERSION) into bin/ and bin/linux_<host arch>/.
	$(call build-for,$(HOST_ARCH))
	ln -f $(BIN)/linux_$(HOST_ARCH)/manager $(BIN)/manager
	ln -f $(BIN)/linux_$(HOST_ARCH)/bootstrap $(BIN)/bootstrap
	ln -f $(BIN)/linux_$(HOST_ARCH)/guestbook-server $(BIN)/guestbook-server
	ln -f $(BIN)/linux_$(HOST_ARCH)/kubectl-myoperator $(BIN)/kubectl-myoperator

.PHONY: build-multiarch
build-multiarch: $(addprefix build-linux-,$(notdir $(PLATFORMS))) ## Cross-compile the four binaries for every platform in PLATFORMS into bin/linux_<arch>/.

# build-linux-ARCH (no such file, so it always runs): one platform's binaries.
build-linux-%:
	$(call build-for,$*)

##@ Test

# TEST_PACKAGES: how many test packages run at once. Most of a package's
# time is waiting on its API server, Leases and managers: on 2 cores, go
# test's default (one per core) left the CPU 56% idle and took 781 s; three
# took 538 s at 27% idle, the longest package (internal/app) 516 s both
# times and the others at most 12 s slower.
TEST_PACKAGES ?= 3

.PHONY: test
test: k8s-binaries $(PROMTOOL) $(CYCLONEDX_GOMOD) $(HELM) manifests generate vet ## Run unit and envtest suites against the project-built kube-apiserver; promtool checks and unit-tests the alerts; helm lints and renders the chart.
	go mod download
	go test -count=1 -exec /bin/true ./... >/dev/null  # compile every test binary outside the namespace, run none
	hack/ensure-nat-tools.sh
	@# test/alerts fails, rather than skips, when PROMTOOL is set and does not run.
	@mkdir -p bin
	@# The whole output goes to bin/test.log as well; on a failure, what
	@# failed is printed again at the end (CI shows only the end).
	$(IN_NETNS) env GOPROXY=off GOFLAGS=-mod=readonly PROMTOOL=$(PROMTOOL) HELM=$(HELM) go test -p $(TEST_PACKAGES) -count=1 -timeout 20m ./... 2>&1 | tee bin/test.log \
		|| { hack/test-failures.sh bin/test.log; exit 1; }

# make fuzz-e2e: the model check (test/modelcheck) with another seed and
# more steps than make test's fixed MODEL_SEED=1, MODEL_STEPS=300.
SEED ?= $(shell date +%s)
STEPS ?= 2000

.PHONY: fuzz-e2e
fuzz-e2e: k8s-binaries ## Random user actions against the operator checked against test/model after each step (SEED=n STEPS=n); a failure prints the shortest failing sequence.
	go test -count=1 -exec /bin/true ./test/modelcheck/ >/dev/null  # compile outside the namespace, run nothing
	$(IN_NETNS) env GOPROXY=off GOFLAGS=-mod=readonly MODEL_SEED=$(SEED) MODEL_STEPS=$(STEPS) MODEL_SHRINK=10m go test -count=1 -timeout 0 -v ./test/modelcheck/ -run TestModel

.PHONY: test-crash-points
test-crash-points: k8s-binaries ## The write-point table: the manager SIGKILLed right after each of its writes in turn, then a fresh one; the final state must equal the fault-free run's (about 14 min; make test runs 8 points).
	go test -count=1 -exec /bin/true ./test/faults/ >/dev/null  # compile outside the namespace, run nothing
	$(IN_NETNS) env GOPROXY=off GOFLAGS=-mod=readonly CRASH_POINTS=all go test -count=1 -timeout 60m -v ./test/faults/ -run TestCrashAtEveryWrite

.PHONY: test-faults-long
test-faults-long: k8s-binaries ## The long forms of the cluster faults: 27,000 objects that are not the operator's against its memory and requests (about 3.5 min), a tenant's 140 MiB of labelled ConfigMaps and annotated Drinks against its heap (about 1 min), and 20 trials of the paused-leader fence (about 4 min).
	go test -count=1 -exec /bin/true ./test/clusterfaults/ ./internal/app/ >/dev/null  # compile outside the namespace, run nothing
	$(IN_NETNS) env GOPROXY=off GOFLAGS=-mod=readonly MYOPERATOR_LONG_FAULTS=1 go test -count=1 -timeout 30m -v ./test/clusterfaults/ -run 'TestForeignObjectsMemory|TestTenantCannotFillCache'
	$(IN_NETNS) env GOPROXY=off GOFLAGS=-mod=readonly FENCE_TRIALS=20 go test -count=1 -timeout 30m -v ./internal/app/ -run TestPausedLeaderIsFenced

# make reliability measures the runs behind docs/RELIABILITY.md's rows
# (RELIABILITY_TESTS chooses some), appends a JSON line per test to
# test/reliability/results (RELIABILITY_RESULTS) and renders the document
# again. One package at a time (-p 1): the figures are times and heaps,
# which a neighbour's load would move. It refuses a tree with uncommitted
# changes, whose figures no commit could be dated with.
RELIABILITY_RESULTS ?= $(ROOT)/test/reliability/results
RELIABILITY_TESTS ?= TestCrashAtEveryWrite|TestStaleAndDroppedEvents|TestModel|TestCreateDeleteRaces|TestReconcilePanic|TestLeaseUnderAPFSqueeze|TestAPIServerRestart|TestManagerWaitsForItsCRDs|TestForeignObjectsMemory|TestTenantCannotFillCache|TestPausedLeaderIsFenced|TestConfigOutageNeverDestroys|TestStorageMigration|TestStorageMigrationFinishes
RELIABILITY_PACKAGES ?= ./test/faults/ ./test/modelcheck/ ./reconcile/ ./internal/app/ ./test/clusterfaults/

.PHONY: reliability
reliability: k8s-binaries ## Measure the fault suites behind docs/RELIABILITY.md (about 25 min; RELIABILITY_TESTS='TestA|TestB' for some), append their results to test/reliability/results and render the document.
	go test -count=1 -exec /bin/true $(RELIABILITY_PACKAGES) >/dev/null  # compile outside the namespace, run nothing
	$(IN_NETNS) env GOPROXY=off GOFLAGS=-mod=readonly RELIABILITY_RESULTS=$(RELIABILITY_RESULTS) MYOPERATOR_LONG_FAULTS=1 \
		go test -p 1 -count=1 -timeout 90m -v $(RELIABILITY_PACKAGES) -run '^($(RELIABILITY_TESTS))$$' 2>&1 | tee $(BIN)/reliability.log | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|reliability: saved'
	@$(MAKE) --no-print-directory reliability-doc

.PHONY: flag-doc
flag-doc: ## Write the manager's flags into docs/configuration.md's table, from internal/managerflags (make verify checks it is current).
	go run ./hack/flagdoc

.PHONY: reliability-doc
reliability-doc: ## Render docs/RELIABILITY.md from test/reliability/RELIABILITY.md.tmpl and the results files (make verify checks it is current).
	go run ./hack/reliabilitydoc

.PHONY: test-mutations
test-mutations: k8s-binaries ## The mutation suite: each test/mutations/*.patch removes a fix from a scratch copy of HEAD and the test it names must fail (MUTATIONS='a b' for some).
	NETNS_RUN="$(IN_NETNS)" hack/mutations.sh $(MUTATIONS)

.PHONY: test-k8s-oldest
test-k8s-oldest: ## make test on the oldest supported Kubernetes: KUBE_OLDEST_VERSION's etcd and kube-apiserver, built into bin/k8s/<version>.
	@# The same recipe with the other version: its binaries are built outside
	@# the namespace, then KUBEBUILDER_ASSETS names their folder.
	$(MAKE) --no-print-directory test KUBE_VERSION=$(KUBE_OLDEST_VERSION)

.PHONY: test-k8s-matrix
test-k8s-matrix: ## make test on every supported Kubernetes in turn (KUBE_MATRIX_VERSIONS), going on past a failing one; a line per version says passed or failed and how long it took; a run on a clean tree is recorded in test/k8s-matrix/results.jsonl, which make release requires.
	hack/k8s-matrix.sh $(KUBE_MATRIX_VERSIONS)

.PHONY: test-dev-cluster
test-dev-cluster: k8s-binaries ## Bring up the dev cluster, check that a Deployment's pods reach Running, tear it down.
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh down $(DEV_CLUSTER)-smoke $(BIN)/smoke.kubeconfig >/dev/null
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh up $(DEV_CLUSTER)-smoke $(BIN)/smoke.kubeconfig
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh smoke $(DEV_CLUSTER)-smoke $(BIN)/smoke.kubeconfig; rc=$$?; \
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh down $(DEV_CLUSTER)-smoke $(BIN)/smoke.kubeconfig; exit $$rc

.PHONY: test-pod-security
test-pod-security: k8s-binaries ## In a kwok cluster, the operator's pods pass Pod Security restricted; a broken pod spec does not.
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/test-pod-security.sh

.PHONY: test-make-run
test-make-run: k8s-binaries manifests generate ## On a kwok cluster: make install, make run (refused while a Deployment of the operator exists), kubectl apply -k config/samples/ and the course's Drink; the samples, the course's Drink and the OperatorConfig the bootstrap created Ready, Drink ConfigMaps in their layouts.
	go test -count=1 -exec /bin/true ./test/userpaths/ >/dev/null  # compile outside the namespace, run nothing
	go build -o /dev/null .  # make run's go run then only links
	$(IN_NETNS) env GOPROXY=off GOFLAGS=-mod=readonly MYOPERATOR_TEST_MAKE_RUN=1 go test -count=1 -timeout 15m -v ./test/userpaths/ -run TestMakeRun

E2E_ARGS ?=
# An existing cluster for the e2e suite instead of the kwok cluster it
# creates (CONTRIBUTING.md: "e2e suites"); with it the suite needs
# neither the Kubernetes binaries nor podman. E2E_NETNS is the network
# namespace the suite runs in (make demo's cluster lives in $(NETNS));
# empty runs it on the host, for a cluster reached over the network.
E2E_KUBECONFIG ?=
# E2E_NODE=real: the cluster the suite creates gets one real node
# (hack/node/node.sh: containerd, kubelet, kube-proxy, built by make
# node-binaries) instead of kwok nodes, and the suite installs the
# production config/default; it runs in a namespace of its own, since
# kube-proxy rewrites the namespace's iptables (docs/REAL-NODE.md).
E2E_NODE ?= kwok
E2E_NETNS ?= $(if $(filter real,$(E2E_NODE)),myoperator-node,$(NETNS))
E2E_TIMEOUT ?= $(if $(filter real,$(E2E_NODE)),40m,20m)
# How the suite installs the operator on the cluster it creates: kustomize
# (kubectl apply -k config/default, the image built from the tree), or from
# make dist's files: manifest (kubectl apply -f install.yaml) or helm (helm
# install of the chart), their images pushed to a registry on loopback and
# pulled from it by digest; those two run the install features only.
E2E_INSTALL ?= kustomize
# The stable window after each helm upgrade of make test-e2e-install-ways.
E2E_HELM_STABLE_FOR ?= 30s

.PHONY: test-e2e
test-e2e: $(if $(E2E_KUBECONFIG),,k8s-binaries cert-manager) $(if $(filter real,$(E2E_NODE)),node-binaries) build $(CONTROLLER_GEN) $(HELM) ## End-to-end suites (e2e-framework) on a kwok cluster they create (E2E_NODE=real: on a real node, make test-e2e-real), or E2E_KUBECONFIG=<file> an existing one; E2E_ARGS="--labels area=drinks" runs one.
	$(if $(E2E_KUBECONFIG),,hack/ensure-podman.sh)
	@# controller-gen is installed here, outside the namespace: the suite runs make deploy, undeploy and uninstall (area=lifecycle), which regenerate the manifests with it.
	@# The upgrade feature builds the previous release from its commit (a git worktree under bin/releases); its modules download here, outside the namespace.
	$(if $(E2E_KUBECONFIG),,$(if $(wildcard RELEASES.md),hack/previous-release.sh >/dev/null))
	@# The loopback registry of E2E_INSTALL=manifest and helm (hack/registry, its own module), built here, outside the namespace.
	$(if $(filter-out kustomize,$(E2E_INSTALL)),go -C hack/registry build -o $(BIN)/registry .)
	@# E2E_INSTALL=helm upgrades from the chart hack/helmchart makes from the previous release's tree.
	$(if $(filter helm,$(E2E_INSTALL)),go build -o $(BIN)/helmchart ./hack/helmchart)
	go test -tags e2e -count=1 -exec /bin/true ./e2e/ >/dev/null  # compile outside the namespace, run nothing
	@# The whole output also goes to bin/e2e.log; on a failure the failed checks' messages are printed again last, where a CI log's tail shows them.
	$(if $(E2E_NETNS),$(ROOT)/hack/netns.sh $(E2E_NETNS)) env GOPROXY=off GOFLAGS=-mod=readonly E2E_NODE=$(E2E_NODE) E2E_NODE_NETNS=$(E2E_NETNS) E2E_INSTALL=$(E2E_INSTALL) HELM=$(HELM) go test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./e2e/ -args $(E2E_ARGS) 2>&1 | tee $(BIN)/e2e.log || \
	  { echo "e2e: the failed checks' messages (whole output in bin/e2e.log):"; awk '/^=== RUN   [^\/]+$$/ {b=""} /^ +[a-z_]+_test\.go:[0-9]+: / {b=b $$0 "\n"} /^--- FAIL: / {printf "%s", b; b=""}' $(BIN)/e2e.log | tail -n 40; exit 1; }

.PHONY: test-e2e-install-ways
test-e2e-install-ways: $(CYCLONEDX_GOMOD) $(HELM) ## make dist for the newest release, then the e2e install features installing its files: E2E_INSTALL=manifest (install.yaml) and E2E_INSTALL=helm (the chart; upgrade, uninstall, install again; upgrade from the previous release's chart and from its kustomize install, under load).
	@# make ci ran make test-dist first: its dist/ of this very tree is restored (hack/dist-snapshot.sh) instead of built again.
	v=$$(go run ./hack/version -newest); hack/dist-snapshot.sh restore $$v && echo "dist/ for $$v restored from make test-dist's (same tree)" || \
	  $(MAKE) --no-print-directory dist VERSION=$$v RELEASE_IMAGES=1 >$(BIN)/e2e-dist.log 2>&1 || { tail -20 $(BIN)/e2e-dist.log; exit 1; }
	$(MAKE) --no-print-directory test-e2e E2E_INSTALL=manifest
	@# The helm run's two upgrades keep their stable window short: area=upgrade holds the same operator still for two minutes.
	E2E_STABLE_FOR=$(E2E_HELM_STABLE_FOR) $(MAKE) --no-print-directory test-e2e E2E_INSTALL=helm

.PHONY: test-e2e-real
test-e2e-real: ## The whole e2e suite on a real node (containerd, kubelet, kube-proxy) with the production config/default, then make dist's install.yaml pulled by containerd from a loopback registry; not in make ci (docs/REAL-NODE.md).
	$(MAKE) test-e2e E2E_NODE=real; rc=$$?; ip netns del myoperator-node 2>/dev/null; [ $$rc = 0 ] || exit $$rc
	$(MAKE) --no-print-directory dist VERSION=$$(go run ./hack/version -newest) RELEASE_IMAGES=1 >$(BIN)/e2e-dist.log 2>&1 || { tail -20 $(BIN)/e2e-dist.log; exit 1; }
	$(MAKE) test-e2e E2E_NODE=real E2E_INSTALL=manifest; rc=$$?; ip netns del myoperator-node 2>/dev/null; exit $$rc

.PHONY: ci
CI_STEPS := verify lint kube-score test test-make-run test-dev-cluster test-pod-security test-image test-dist test-demo test-e2e test-e2e-install-ways
ci: ## Everything CI runs: verify, lint, kube-score, every test suite, the dev-cluster, image, release files, demo and e2e checks (make test-k8s-oldest runs apart). Prints each step's time.
	@MAKE="$(MAKE)" hack/ci.sh $(CI_STEPS)

##@ Kubernetes binaries and local cluster

.PHONY: cert-manager
cert-manager: $(CERT_MANAGER) ## Build the launcher of cert-manager's own issuing controllers and cainjector (hack/certmanager, its own module) into bin/cert-manager-<version>/.
$(CERT_MANAGER): hack/certmanager/go.mod hack/certmanager/go.sum hack/certmanager/main.go
	cd hack/certmanager && CGO_ENABLED=0 go build -trimpath -o $@ .

.PHONY: k8s-binaries
k8s-binaries: ## Build etcd, kube-apiserver, controller-manager, scheduler, kwok into bin/k8s/<version> (only what is missing).
	KUBE_VERSION=$(KUBE_VERSION) KWOK_VERSION=$(KWOK_VERSION) hack/build-k8s.sh $(K8S_BIN)

.PHONY: node-binaries
node-binaries: ## Build a real node (not in make ci): kubelet, kube-proxy, containerd, ctr, CNI plugins, pause image into bin/node/<version> (docs/REAL-NODE.md).
	KUBE_VERSION=$(KUBE_VERSION) hack/build-node.sh $(BIN)/node/$(KUBE_VERSION)

DEV_CLUSTER ?= myoperator-dev
DEV_KUBECONFIG ?= $(BIN)/dev-cluster.kubeconfig

.PHONY: dev-cluster
dev-cluster: k8s-binaries ## Start a local kwok cluster (real control plane, fake nodes) on the project-built binaries.
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh up $(DEV_CLUSTER) $(DEV_KUBECONFIG)

.PHONY: dev-cluster-down
dev-cluster-down: ## Delete the local kwok cluster.
	K8S_BIN=$(K8S_BIN) NETNS=$(NETNS) hack/dev-cluster.sh down $(DEV_CLUSTER) $(DEV_KUBECONFIG)

# make run serves the webhooks on https://localhost:$(RUN_WEBHOOK_PORT) and its
# probes on $(RUN_PROBE_ADDR); make install-local points the API server at the
# same port, so give both the same RUN_WEBHOOK_PORT.
RUN_WEBHOOK_PORT ?= 9443
RUN_PROBE_ADDR ?= 127.0.0.1:8081

.PHONY: install-local
install-local: manifests ## Install what make run needs (make run does it too): CRDs, webhooks called on https://localhost:9443 (RUN_WEBHOOK_PORT), namespaces, cert Secret.
	@WHO="make install-local" KUBECTL="$(KUBECTL)" RUN_WEBHOOK_PORT=$(RUN_WEBHOOK_PORT) hack/run-local.sh

.PHONY: run
run: manifests generate ## Run the manager on this host against the current kubeconfig (after make install, as in the course): applies config/local, runs the bootstrap (OperatorConfig cluster with defaults when absent), serves its webhooks with its own certificates; refuses when the operator is deployed.
	@KUBECTL="$(KUBECTL)" RUN_WEBHOOK_PORT=$(RUN_WEBHOOK_PORT) hack/run-local.sh
	@# What the initContainer does in the cluster: OperatorConfig cluster, with defaults, when it is absent.
	go run ./initcontainer --zap-devel
	go run . --namespace=myoperator-system --webhook-host=127.0.0.1 --webhook-port=$(RUN_WEBHOOK_PORT) \
		--webhook-extra-dns-names=localhost --metrics-bind-address=0 --health-probe-bind-address=$(RUN_PROBE_ADDR) --zap-devel

.PHONY: run-local
run-local: run ## Same as make run (its former name).

##@ Benchmarks

# Where make bench-full collects one JSON record per run and size; its table
# of medians goes into docs/BENCHMARKS.md.
BENCH_RESULTS ?= $(ROOT)/test/bench/results/full.jsonl
BENCH_FULL_RUNS ?= 3
# The sizes of make bench-full: 50,000 is the scale the targets are set for; 10,000 to
# 50,000 gives the heap per Drink; 5,000 and 1,000 compare with before.
BENCH_FULL_SIZES ?= 50000 10000 5000 1000
# Further flags for every bench run, for example BENCH_FLAGS="-reconciles 16,32".
BENCH_FLAGS ?=
# make bench-full measures the manager's default concurrency only: a sweep
# of K converges once more per K, 6 to 8 minutes each at 50,000.
BENCH_FULL_FLAGS ?= -reconciles 16
# make bench-full ends with make bench-shards (yes) or not (no).
BENCH_FULL_SHARDS ?= yes
# A lock file each benchmark run holds while it measures (for example
# /tmp/myoperator-heavy.lock), so that nothing else sharing it loads the
# machine or the webhook port 9443 meanwhile; empty takes no lock.
BENCH_LOCK ?=
BENCH_LOCKED := $(if $(BENCH_LOCK),flock $(BENCH_LOCK))

.PHONY: bench
bench: k8s-binaries build ## Quick benchmark (N=1000, one run, about 4 min): API server write ceiling vs the operator, waste, memory, conversion, restart, handover, admission tail.
	go build -o $(BIN)/bench ./test/bench/cmd/bench
	$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -n 1000 $(BENCH_FLAGS)

.PHONY: bench-full
bench-full: k8s-binaries build ## Full benchmark: BENCH_FULL_RUNS runs at N=BENCH_FULL_SIZES into BENCH_RESULTS, then the table of medians with min and max (about 34 min a run at the default sizes, so about 1 h 45 min), then make bench-shards (BENCH_FULL_SHARDS=no skips it).
	go build -o $(BIN)/bench ./test/bench/cmd/bench
	@mkdir -p $(dir $(BENCH_RESULTS)) && rm -f $(BENCH_RESULTS)
	for run in $$(seq $(BENCH_FULL_RUNS)); do for n in $(BENCH_FULL_SIZES); do \
		$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -n $$n -step 5s $(BENCH_FULL_FLAGS) $(BENCH_FLAGS) -out $(BENCH_RESULTS) >/dev/null || exit 1; \
	done; done
	$(BIN)/bench -report $(BENCH_RESULTS)
	$(if $(filter yes,$(BENCH_FULL_SHARDS)),$(MAKE) bench-shards)

# make bench-config-outage: BENCH_OUTAGE_N Drinks converged, then OperatorConfig
# cluster deleted and recreated as the bootstrap does; every write the API
# server receives meanwhile, one JSON record (with machine, command and commit)
# appended to BENCH_OUTAGE_RESULTS. test/bench/results/config-outage.md reads it.
BENCH_OUTAGE_N ?= 50000
BENCH_OUTAGE_RESULTS ?= $(ROOT)/test/bench/results/config-outage.jsonl

.PHONY: bench-config-outage
bench-config-outage: k8s-binaries build ## OperatorConfig outage at N=BENCH_OUTAGE_N converged Drinks: every API write while cluster is deleted and recreated by the bootstrap, appended to BENCH_OUTAGE_RESULTS (about 25 min at 50,000).
	go build -o $(BIN)/bench ./test/bench/cmd/bench
	@mkdir -p $(dir $(BENCH_OUTAGE_RESULTS))
	$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -outage -n $(BENCH_OUTAGE_N) -reconciles 16 $(BENCH_FLAGS) -out $(BENCH_OUTAGE_RESULTS)

# make bench-shards: for each N of BENCH_SHARDS_N, N Drinks created while
# 1, 2 and 4 replicas run (BENCH_SHARDS_REPLICAS; one runs as the default
# single leader, more with --shard-drinks and the fence on an API server with
# ShardedListAndWatch), and the largest count again without the feature
# gate; one JSON record per run (machine, command, commit) appended to
# BENCH_SHARDS_RESULTS. Then, at BENCH_SHARDS_FAULTS_N, a SIGKILL of one of 4
# replicas under probe Drinks and a scale 1 -> 4 -> 2 -> 1 under the creates,
# each replayed from the API server's audit log, into
# BENCH_SHARDS_FAULTS_RESULTS. Every replica runs with the memory limit
# BENCH_SHARDS_MEMORY_LIMIT (bytes; 2 GiB fits one leader with 200,000
# Drinks). docs/sharding.md reads both files.
BENCH_SHARDS_N ?= 50000,200000
BENCH_SHARDS_REPLICAS ?= 1,2,4
BENCH_SHARDS_RESULTS ?= $(ROOT)/test/bench/results/shards.jsonl
BENCH_SHARDS_FAULTS_N ?= 200000
BENCH_SHARDS_FAULTS_RESULTS ?= $(ROOT)/test/bench/results/shard-faults.jsonl
BENCH_SHARDS_MEMORY_LIMIT ?= 2147483648

.PHONY: bench-shards
bench-shards: k8s-binaries build ## Replicas that share the Drinks at N=BENCH_SHARDS_N (1, 2, 4 replicas, and without the feature gate: convergence, heap, Drink bytes read, writes after convergence), then a SIGKILL of 1 of 4 and a scale 1 -> 4 -> 2 -> 1 at BENCH_SHARDS_FAULTS_N (here: 34 min at 50,000, 2 h 2 min at 200,000, the kill 45 min; the scale 10 min at 50,000, 49 min at 200,000).
	go build -o $(BIN)/bench ./test/bench/cmd/bench
	hack/ensure-nat-tools.sh
	@mkdir -p $(dir $(BENCH_SHARDS_RESULTS)) $(dir $(BENCH_SHARDS_FAULTS_RESULTS))
	$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -shards $(BENCH_SHARDS_REPLICAS) -shards-gate-off -n $(BENCH_SHARDS_N) -reconciles 16 -shard-memory-limit $(BENCH_SHARDS_MEMORY_LIMIT) $(BENCH_FLAGS) -out $(BENCH_SHARDS_RESULTS)
	$(BENCH_LOCKED) $(IN_NETNS) env GOPROXY=off $(BIN)/bench -shard-kill 4 -shard-scale 1,4,2,1 -n $(BENCH_SHARDS_FAULTS_N) -reconciles 16 -shard-memory-limit $(BENCH_SHARDS_MEMORY_LIMIT) $(BENCH_FLAGS) -out $(BENCH_SHARDS_FAULTS_RESULTS)

##@ Container image

# docker when a Docker engine answers, else podman (installed when missing).
CONTAINER_TOOL ?= $(shell docker info >/dev/null 2>&1 && echo docker || echo podman)

.PHONY: docker-build
docker-build: build ## Build the image IMG for the host's architecture (manager and bootstrap, FROM scratch, uid 65532).
	@if [ "$(CONTAINER_TOOL)" = podman ]; then hack/ensure-podman.sh; fi
	$(CONTAINER_TOOL) build -t $(IMG) .

# The multi-arch image's name; its manifest list goes to MULTIARCH_DEST.
MULTIARCH_IMG ?= $(IMAGE_REPO):$(VERSION)
MULTIARCH_DEST ?= oci-archive:$(BIN)/images/$(notdir $(subst :,_,$(MULTIARCH_IMG))).tar

.PHONY: docker-build-multiarch
docker-build-multiarch: build-multiarch ## Images for PLATFORMS (podman, MULTIARCH_IMG-<arch>) and their manifest list as an OCI archive in bin/images/.
	hack/ensure-podman.sh
	PLATFORMS="$(PLATFORMS)" hack/image-multiarch.sh $(MULTIARCH_IMG) $(MULTIARCH_DEST)

.PHONY: docker-push-multiarch
docker-push-multiarch: ## Push the manifest list of MULTIARCH_IMG's platform images (after docker-build-multiarch) to its registry.
	hack/ensure-podman.sh
	PLATFORMS="$(PLATFORMS)" hack/image-multiarch.sh $(MULTIARCH_IMG) docker://$(MULTIARCH_IMG)

.PHONY: release
release: ## Cut release VERSION=x.y.z (or x.y.z-rc.n) from HEAD: RELEASES.md, image tags, bundle, multi-arch images; prints the git commands (hack/release.sh).
	@$(if $(filter command line environment,$(origin VERSION)),,echo "release: usage: make release VERSION=x.y.z (or x.y.z-rc.n)" >&2; exit 1)
	KUBE_MATRIX_VERSIONS="$(KUBE_MATRIX_VERSIONS)" hack/release.sh $(VERSION)

.PHONY: dist
dist: $(CYCLONEDX_GOMOD) $(HELM) ## Write release VERSION's artifacts into dist/: install.yaml, install-certmanager.yaml, Helm chart, bundle, image archives by digest, SBOMs, SHA256SUMS (hack/dist.sh; make release runs it).
	@$(if $(filter command line environment,$(origin VERSION)),,echo "dist: usage: make dist VERSION=vx.y.z (a release in bundle/releases)" >&2; exit 1)
	CYCLONEDX=$(CYCLONEDX_GOMOD) HELM=$(HELM) IMAGE_REPO=$(IMAGE_REPO) GUESTBOOK_IMG=$(GUESTBOOK_IMG) PLATFORMS="$(PLATFORMS)" hack/dist.sh v$(VERSION:v%=%)

# REGISTRY is where make release-push sends dist/'s images (host/path).
REGISTRY ?=

.PHONY: release-push
release-push: ## Push dist/'s image archives to REGISTRY=host/path as they are (same digests) and point dist/'s manifests at them (hack/registry).
	@$(if $(REGISTRY),,echo "release-push: set REGISTRY=host/path" >&2; exit 1)
	go -C hack/registry run . push -to $(REGISTRY) $(if $(REGISTRY_INSECURE),-insecure) -from $(patsubst %/,%,$(dir $(IMAGE_REPO))) $(ROOT)/dist

.PHONY: test-dist
test-dist: $(CYCLONEDX_GOMOD) $(HELM) ## Check a release's files: make dist with images for the newest release, SHA256SUMS, digests in install.yaml and the manager, make release-push to a loopback registry, podman pulls by digest (hack/test-dist.sh).
	HELM=$(HELM) hack/test-dist.sh

.PHONY: test-image
test-image: docker-build-multiarch ## Check the images: manifest list of both platforms, each binary's architecture, uid 65532, both binaries run read-only.
	IMG=$(MULTIARCH_IMG) ARCHIVE=$(patsubst oci-archive:%,%,$(MULTIARCH_DEST)) PLATFORMS="$(PLATFORMS)" VERSION=$(VERSION) hack/test-image.sh

.PHONY: docker-push
docker-push: ## Push the image IMG.
	$(CONTAINER_TOOL) push $(IMG)

# The Guestbook pods' image, OperatorConfig's default guestbook.image
# (operatorv1alpha1.DefaultGuestbookImage names the same one). Its version
# is its own: it moves when guestbookserver/ changes, not with the
# operator's releases.
GUESTBOOK_IMG ?= ghcr.io/example/myoperator-guestbook:v1.0.0

.PHONY: guestbook-image
guestbook-image: build ## Build the Guestbook pods' image GUESTBOOK_IMG for the host's architecture (guestbook-server, FROM scratch, uid 65532).
	@if [ "$(CONTAINER_TOOL)" = podman ]; then hack/ensure-podman.sh; fi
	$(CONTAINER_TOOL) build -f guestbook.Dockerfile -t $(GUESTBOOK_IMG) .

##@ Deployment

# What deploy installs (the CRDs, the Guestbook operand namespace and the
# operator; another kustomization, for example an overlay with config/certmanager) and
# what undeploy removes (the operator alone: users' data stays).
DEPLOY_CONFIG ?= config/default
UNDEPLOY_CONFIG ?= config/operator
# make uninstall deletes only with CONFIRM=yes.
CONFIRM ?=

.PHONY: install
install: manifests ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Delete the CRDs and every Drink, Guestbook, OperatorConfig: prints what and where, deletes only with CONFIRM=yes.
	@KUBECTL="$(KUBECTL)" CONFIRM="$(CONFIRM)" hack/uninstall.sh

.PHONY: deploy
deploy: manifests ## Deploy the operator with image IMG (config/default: CRDs, operand namespace, operator; or DEPLOY_CONFIG).
	hack/render-default.sh $(IMG) $(DEPLOY_CONFIG) | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: ## Remove the operator (config/operator); CRDs, custom resources and operands stay.
	KUBECTL="$(KUBECTL)" hack/undeploy.sh $(UNDEPLOY_CONFIG)

##@ Tools

$(CONTROLLER_GEN):
	@echo "installing controller-gen $(CONTROLLER_GEN_VERSION) into bin/"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/.tmp/controller-gen $@

$(CYCLONEDX_GOMOD):
	@echo "installing cyclonedx-gomod $(CYCLONEDX_GOMOD_VERSION) into bin/ (about 30 s when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)
	mv $(BIN)/.tmp/cyclonedx-gomod $@

$(GOLANGCI_LINT):
	@echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into bin/ (about 2 minutes when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/.tmp/golangci-lint $@

.PHONY: promtool
promtool: $(PROMTOOL) ## Build Prometheus's promtool from its Go module (hack/promtool pins it) into bin/promtool-<version>, for make test's alert tests.
# remove_all_sd: Prometheus's plugins package links no service-discovery SDK
# (AWS, Azure, GCE, Kubernetes...), which check rules and test rules never
# use: a cold build (empty build cache) took 2m03s instead of 3m40s.
$(PROMTOOL): hack/promtool/go.mod hack/promtool/go.sum
	@echo "building promtool $(PROMTOOL_VERSION) into bin/ (about 2 minutes when cold)"
	cd hack/promtool && CGO_ENABLED=0 go build -trimpath -tags remove_all_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=$(PROMTOOL_VERSION:v%=%)" -o $@.tmp github.com/prometheus/prometheus/cmd/promtool
	mv $@.tmp $@

.PHONY: helm
helm: $(HELM) ## Build helm from its Go module (helm.sh/helm/v4 at HELM_VERSION) into bin/helm-<version>, for the chart's tests and make dist.
$(HELM):
	@echo "building helm $(HELM_VERSION) into bin/ (about 2.5 minutes when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)" helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)
	mv $(BIN)/.tmp/helm $@

$(DEADCODE):
	@echo "installing deadcode $(DEADCODE_VERSION) into bin/"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION)
	mv $(BIN)/.tmp/deadcode $@

$(KUBE_SCORE):
	@echo "installing kube-score $(KUBE_SCORE_VERSION) into bin/ (about 1.5 minutes when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install github.com/zegl/kube-score/cmd/kube-score@$(KUBE_SCORE_VERSION)
	mv $(BIN)/.tmp/kube-score $@
