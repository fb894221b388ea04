# Tools: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Tools

# tools: every tool the checks use, built into bin/ when missing (make
# ci's second step, before its steps run side by side and would each build
# the ones they need at the same moment).
.PHONY: tools
tools: $(CONTROLLER_GEN) $(CYCLONEDX_GOMOD) $(GOLANGCI_LINT) $(PROMTOOL) $(HELM) $(DEADCODE) $(KUBE_SCORE) $(CERT_MANAGER)

$(CONTROLLER_GEN):
	@echo "installing controller-gen $(CONTROLLER_GEN_VERSION) into bin/"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/.tmp/controller-gen $@

.PHONY: cyclonedx-gomod
cyclonedx-gomod: $(CYCLONEDX_GOMOD) ## Build cyclonedx-gomod into bin/, for the release's SBOMs (make dist, make test's release tests).
$(CYCLONEDX_GOMOD):
	@echo "installing cyclonedx-gomod $(CYCLONEDX_GOMOD_VERSION) into bin/ (about 30 s when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)
	mv $(BIN)/.tmp/cyclonedx-gomod $@

$(GOLANGCI_LINT):
	@echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into bin/ (about 2 minutes when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/.tmp/golangci-lint $@

.PHONY: promtool
promtool: $(PROMTOOL) ## Build Prometheus's promtool from its Go module (hack/tools pins it) into bin/promtool-<version>, for make test's alert tests.
# remove_all_sd: Prometheus's plugins package links no service-discovery SDK
# (AWS, Azure, GCE, Kubernetes...), which check rules and test rules never
# use: a cold build (empty build cache) took 2m03s instead of 3m40s.
$(PROMTOOL): hack/tools/go.mod hack/tools/go.sum
	@echo "building promtool $(PROMTOOL_VERSION) into bin/ (about 2 minutes when cold)"
	cd hack/tools && CGO_ENABLED=0 go build -trimpath -tags remove_all_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=$(PROMTOOL_VERSION:v%=%)" -o $@.tmp github.com/prometheus/prometheus/cmd/promtool
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
