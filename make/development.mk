# Development: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Development

# REGENERATE=no: manifests and generate leave the generated files as they
# are. make ci passes it to every step after make verify, which has just
# regenerated them all and failed on any drift: its steps run side by side,
# and controller-gen truncates a file before writing it again, so a step
# compiling or reading it at that moment (go:embed of the Drink CRD in
# internal/crdvalidation, the chart's tests, kube-score) could see it empty.
# Nested makes (the e2e suite's make deploy) inherit it through MAKEFLAGS.
REGENERATE ?= yes

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs (config/crd/bases), webhook configurations (config/webhook) and RBAC (config/rbac) from markers.
ifeq ($(REGENERATE),no)
	@echo "manifests: REGENERATE=no: left as make verify checked them"
else
	$(CONTROLLER_GEN) crd paths="./apis/..." output:crd:artifacts:config=config/crd/bases
	@# The Drink webhook validates every version's writes against the v1 rules of this CRD, embedded in the binary.
	cp config/crd/bases/example.com_drinks.yaml internal/crdvalidation/example.com_drinks.yaml
	$(CONTROLLER_GEN) webhook paths="./internal/webhook/..." output:webhook:artifacts:config=config/webhook
	@# The packages with +kubebuilder:rbac markers, not ./...: controller-gen would also load the tools' own modules under
	@# hack/, which need modules that make deploy (run offline by the e2e suite) may not have downloaded.
	$(CONTROLLER_GEN) rbac:roleName=myoperator-manager-role paths="./internal/...;./reconcile/...;./bootstrap/..." output:rbac:artifacts:config=config/rbac
endif

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code (zz_generated.*) for the APIs.
ifeq ($(REGENERATE),no)
	@echo "generate: REGENERATE=no: left as make verify checked them"
else
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./apis/..."
endif

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
lint: $(GOLANGCI_LINT) ## Run golangci-lint with .golangci.yml, also on the tools' own module (hack/tools: olm-validate, certmanager, registry, promtool's pin).
	$(GOLANGCI_LINT) run ./...
	@# The tools' module, which ./... does not reach.
	cd hack/tools && $(GOLANGCI_LINT) run --config $(ROOT)/.golangci.yml ./...

.PHONY: kube-score
kube-score: $(KUBE_SCORE) ## Score the rendered config/default (and with config/network-policy, config/namespace-scope) with kube-score; fail on any CRITICAL.
	hack/kube-score.sh $(KUBE_SCORE)

.PHONY: bench-doc
bench-doc: ## Render docs/BENCHMARKS.md and its plots (docs/bench/*.svg) from test/bench/BENCHMARKS.md.tmpl and test/bench/results (make verify checks they are current).
	go run ./hack/benchdoc

# FIGURE_DOCS: the documents whose marked figures make verify checks against
# test/reliability/results and test/bench/results (hack/reliabilitydoc/figures.go;
# docs/BENCHMARKS.md is rendered with a marker on every figure).
FIGURE_DOCS := README.md docs/sizing.md docs/sharding.md docs/SECURITY.md docs/BENCHMARKS.md

# verify-generated: the first part of make verify, the only one that
# writes: every generated file made again, failing when one changed. make
# ci runs it first, alone, then the rest of verify beside the other steps
# (make verify -o verify-generated).
.PHONY: verify-generated
verify-generated: $(CONTROLLER_GEN)
	@mkdir -p $(BIN) && hack/tree-digest.sh > $(BIN)/.verify-before
	@$(MAKE) --no-print-directory generate manifests bundle chart reliability-doc bench-doc flag-doc rbac-doc REGENERATE=yes
	@hack/tree-digest.sh > $(BIN)/.verify-after
	@if ! diff -q $(BIN)/.verify-before $(BIN)/.verify-after >/dev/null; then \
		diff $(BIN)/.verify-before $(BIN)/.verify-after | grep '^[<>]' | awk '{print $$NF}' | sort -u | sed 's/^/  changed by regeneration: /' || true; \
		echo "verify: generated files differed from their sources (now regenerated; review with git diff and commit)"; exit 1; fi

# vulncheck: govulncheck on the four shipped binaries, offline, against the
# Go vulnerability database of VULNDB_VERSION's day; a planted entry must be
# reported first (hack/vulncheck.sh says why and how).
.PHONY: vulncheck
vulncheck: $(GOVULNCHECK) build ## Fail when a shipped binary links a symbol the Go vulnerability database (golang.org/x/vulndb at VULNDB_VERSION) lists as vulnerable.
	@hack/vulncheck.sh $(GOVULNCHECK) $(VULNDB_VERSION) $(addprefix $(BIN)/,manager bootstrap guestbook-server kubectl-myoperator)

.PHONY: verify
verify: $(DEADCODE) verify-generated vulncheck ## Fail on drift: regenerated code and manifests, gofmt, go.mod, shipped binaries linking test code or a known vulnerability, shipped code no binary reaches, stale file references, long commit subjects.
	@gofmt -s -l $$(git ls-files '*.go') | (! grep .) || { echo "verify: gofmt -s would change the files above; run make fmt"; exit 1; }
	@# make manifests reads RBAC markers from these packages only.
	@if git grep -l '+kubebuilder:rbac' -- '*.go' ':!internal/' ':!reconcile/' ':!bootstrap/'; then echo "verify: RBAC markers in the files above, outside the paths make manifests reads; add their packages there"; exit 1; fi
	@# The shipped binaries link only the product's packages (hack/check-deps.sh).
	@hack/check-deps.sh
	@# The test cluster's Kubernetes build requires the operator's library versions, so that a fresh machine compiles them once (hack/check-k8s-libs.sh).
	@hack/check-k8s-libs.sh
	@# Shipped code that none of the four binaries reaches (only tests or tooling would) is dead: delete it, or move a test's helper into its export_test.go.
	@out=$$($(DEADCODE) -filter '^$(SHIPPED_RE)' . ./initcontainer ./guestbookserver ./kubectl-myoperator) && [ -z "$$out" ] || { echo "$$out"; echo "verify: shipped code above is reached by no binary (deadcode)"; exit 1; }
	@# Every file a document or Go comment cites exists, and none cites an issue number.
	@go run ./hack/checkrefs
	@# Each figure a document marks with the results figure it quotes (<!-- fig Test.figure -->, <!-- fig bench:kind.selector.field -->) equals its newest saved run.
	@go run ./hack/reliabilitydoc -figures "$(FIGURE_DOCS)"
	@# Every mutation patch still applies to this tree (hack/mutations.sh runs them; one that no longer applies guards nothing).
	@for p in test/mutations/*.patch; do git apply --check "$$p" 2>/dev/null || { echo "verify: $$p no longer applies to this tree: the code it mutates moved; update the patch (git apply --check $$p says where)"; exit 1; }; done
	@# Every command block of the README and docs/{install,demo,plugin}.md is run by a test that reads it from there, or marked not run with the reason.
	@go run ./hack/docblocks
	@# Commit subjects of at most 72 characters, from the commit that added the check on.
	@hack/check-commits.sh
	@go mod tidy -diff >/dev/null || { echo "verify: go.mod/go.sum are not tidy; run go mod tidy"; exit 1; }
	@# OLM's own validators (operator-framework/api, in the tools' module) on bundle/ and every released bundle, the upgrade graph they form, and their tests.
	@cd hack/tools && go mod tidy -diff >/dev/null || { echo "verify: hack/tools's go.mod/go.sum are not tidy; run go mod tidy there"; exit 1; }
	@cd hack/tools/krew && go mod tidy -diff >/dev/null || { echo "verify: hack/tools/krew's go.mod/go.sum are not tidy; run go mod tidy there"; exit 1; }
	@go -C hack/tools/olm-validate build -o $(BIN)/olm-validate .
	@$(BIN)/olm-validate --k8s-version $(KUBE_VERSION:v%=%) bundle $(wildcard bundle/releases/v*)
	@cd hack/tools/olm-validate && go test -count=1 ./... | grep -v 'no test files' | sed 's/^/verify: olm-validate tests: /'
	@# The release's image push (hack/tools/registry) against a registry on loopback.
	@cd hack/tools/registry && go test -count=1 ./... | sed 's/^/verify: registry tests: /'
	@echo "verify: generated files, formatting and go.mod are up to date"
