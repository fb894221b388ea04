# Tools: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Tools

# tools: every tool the checks use, built into bin/ when missing (make
# ci's second step, before its steps run side by side and would each build
# the ones they need at the same moment).
.PHONY: tools
tools: $(CONTROLLER_GEN) $(CYCLONEDX_GOMOD) $(GOLANGCI_LINT) $(PROMTOOL) $(HELM) $(DEADCODE) $(GOVULNCHECK) $(KUBE_SCORE) $(CERT_MANAGER) $(KREW) $(COSIGN)

# Most tools are built in the tools' module (hack/tools/go.mod names each
# in a tool directive), not with go install of each tool's own module:
# there their dependencies resolve to one version each, so that
# client-go, the Kubernetes APIs, gRPC and the rest are compiled once for
# helm, controller-gen, promtool, cert-manager's launcher, cyclonedx-gomod,
# deadcode and cosign, where each tool's own go.mod compiled its own copy on a
# fresh machine. They are built together, by one go build (make
# tools-module): builds of one module side by side each compile the
# packages they share, as nothing tells one go command what another is
# compiling. Two tools stay apart: golangci-lint, whose analyzers are
# pinned to its own golang.org/x/tools, and kube-score, which needs API
# versions that k8s.io/api no longer has (autoscaling/v2beta1).
#
# promtool's tag remove_all_sd: Prometheus's plugins package then links
# no service-discovery SDK (AWS, Azure, GCE, Kubernetes...), which check
# rules and test rules never use (a cold build took 2m03s instead of
# 3m40s); no other tool has a file it selects. The -X flags set each
# tool's version where it reads one.
TOOLS_MODULE_PKGS := sigs.k8s.io/controller-tools/cmd/controller-gen github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod \
	github.com/prometheus/prometheus/cmd/promtool helm.sh/helm/v4/cmd/helm golang.org/x/tools/cmd/deadcode golang.org/x/vuln/cmd/govulncheck github.com/sigstore/cosign/v3/cmd/cosign ./certmanager
TOOLS_MODULE_LDFLAGS := -s -w -X github.com/prometheus/common/version.Version=$(PROMTOOL_VERSION:v%=%) -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION) \
	-X sigs.k8s.io/release-utils/version.gitVersion=$(COSIGN_VERSION)

.PHONY: tools-module
tools-module: $(CONTROLLER_GEN) $(KREW) ## Build the tools of the tools' module (hack/tools): controller-gen, cyclonedx-gomod, promtool, helm, deadcode, govulncheck, cosign, cert-manager's launcher, with one go build; and krew's module (hack/tools/krew).
$(CONTROLLER_GEN) $(CYCLONEDX_GOMOD) $(PROMTOOL) $(HELM) $(DEADCODE) $(GOVULNCHECK) $(COSIGN) $(CERT_MANAGER) &: hack/tools/go.mod hack/tools/go.sum hack/tools/certmanager/main.go
	@echo "building controller-gen $(CONTROLLER_GEN_VERSION), cyclonedx-gomod $(CYCLONEDX_GOMOD_VERSION), promtool $(PROMTOOL_VERSION), helm $(HELM_VERSION), deadcode $(DEADCODE_VERSION), govulncheck $(GOVULNCHECK_VERSION), cosign $(COSIGN_VERSION), cert-manager's launcher $(CERT_MANAGER_VERSION) into bin/"
	rm -rf $(BIN)/.tools-module && mkdir -p $(BIN)/.tools-module $(dir $(CERT_MANAGER))
	cd hack/tools && go build -trimpath -tags remove_all_sd -ldflags "$(TOOLS_MODULE_LDFLAGS)" -o $(BIN)/.tools-module/ $(TOOLS_MODULE_PKGS)
	mv $(BIN)/.tools-module/controller-gen $(CONTROLLER_GEN)
	mv $(BIN)/.tools-module/cyclonedx-gomod $(CYCLONEDX_GOMOD)
	mv $(BIN)/.tools-module/promtool $(PROMTOOL)
	mv $(BIN)/.tools-module/helm $(HELM)
	mv $(BIN)/.tools-module/deadcode $(DEADCODE)
	mv $(BIN)/.tools-module/govulncheck $(GOVULNCHECK)
	mv $(BIN)/.tools-module/cosign $(COSIGN)
	mv $(BIN)/.tools-module/certmanager $(CERT_MANAGER)
	rm -rf $(BIN)/.tools-module

.PHONY: krew
krew: $(KREW) ## Build krew and krew's validate-krew-manifest (hack/tools/krew) into bin/krew-<version>/, for the plugin's krew manifest.
$(KREW): hack/tools/krew/go.mod hack/tools/krew/go.sum
	@echo "building krew $(KREW_VERSION) and validate-krew-manifest into bin/krew-$(KREW_VERSION)/"
	rm -rf $(dir $(KREW)).tmp && mkdir -p $(dir $(KREW)).tmp
	cd hack/tools/krew && go build -trimpath -ldflags "-s -w" -o $(dir $(KREW)).tmp/ sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest
	mv $(dir $(KREW)).tmp/validate-krew-manifest $(dir $(KREW))validate-krew-manifest
	mv $(dir $(KREW)).tmp/krew $(KREW)
	rm -rf $(dir $(KREW)).tmp

.PHONY: cosign
cosign: $(COSIGN) ## Build cosign into bin/ (with the tools' module: make tools-module), for signing the release's files and images (hack/sign.sh).

.PHONY: cyclonedx-gomod
cyclonedx-gomod: $(CYCLONEDX_GOMOD) ## Build cyclonedx-gomod into bin/ (with the tools' module: make tools-module), for the release's SBOMs.

.PHONY: promtool
promtool: $(PROMTOOL) ## Build Prometheus's promtool (with the tools' module: make tools-module) into bin/promtool-<version>, for make test's alert tests.

.PHONY: helm
helm: $(HELM) ## Build helm from helm.sh/helm/v4, pinned in hack/tools (with the tools' module: make tools-module), into bin/helm-<version>.

$(GOLANGCI_LINT):
	@echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into bin/ (about 2 minutes when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/.tmp/golangci-lint $@

$(KUBE_SCORE):
	@echo "installing kube-score $(KUBE_SCORE_VERSION) into bin/ (about 1.5 minutes when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install github.com/zegl/kube-score/cmd/kube-score@$(KUBE_SCORE_VERSION)
	mv $(BIN)/.tmp/kube-score $@
