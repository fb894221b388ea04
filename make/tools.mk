# Tools: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Tools

# tools: every tool the checks use, built into bin/ when missing (make
# ci's second step, before its steps run side by side and would each build
# the ones they need at the same moment).
.PHONY: tools
tools: $(CONTROLLER_GEN) $(CYCLONEDX_GOMOD) $(GOLANGCI_LINT) $(PROMTOOL) $(HELM) $(DEADCODE) $(KUBE_SCORE) $(CERT_MANAGER)

# Most tools are built in the tools' module (hack/tools/go.mod names each
# in a tool directive), not with go install of each tool's own module:
# there their dependencies resolve to one version each, so that
# client-go, the Kubernetes APIs, gRPC and the rest are compiled once for
# helm, controller-gen, promtool, cert-manager's launcher, the OLM
# validators and the registry, where each tool's own go.mod compiled its
# own copy on a fresh machine. Two stay apart: golangci-lint, whose
# analyzers are pinned to its own golang.org/x/tools, and kube-score,
# which needs API versions that k8s.io/api no longer has
# (autoscaling/v2beta1). tools-build PKG [LDFLAGS] builds PKG of the
# tools' module into $@.
define tools-build
cd hack/tools && go build -trimpath -ldflags "-s -w $(2)" -o $@.tmp $(1)
mv $@.tmp $@
endef

$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	@echo "building controller-gen $(CONTROLLER_GEN_VERSION) into bin/"
	$(call tools-build,sigs.k8s.io/controller-tools/cmd/controller-gen)

.PHONY: cyclonedx-gomod
cyclonedx-gomod: $(CYCLONEDX_GOMOD) ## Build cyclonedx-gomod into bin/, for the release's SBOMs (make dist, make test's release tests).
$(CYCLONEDX_GOMOD): hack/tools/go.mod hack/tools/go.sum
	@echo "building cyclonedx-gomod $(CYCLONEDX_GOMOD_VERSION) into bin/"
	$(call tools-build,github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod)

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
helm: $(HELM) ## Build helm from its Go module (helm.sh/helm/v4, pinned in hack/tools) into bin/helm-<version>, for the chart's tests and make dist.
$(HELM): hack/tools/go.mod hack/tools/go.sum
	@echo "building helm $(HELM_VERSION) into bin/"
	$(call tools-build,helm.sh/helm/v4/cmd/helm,-X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION))

$(DEADCODE): hack/tools/go.mod hack/tools/go.sum
	@echo "building deadcode $(DEADCODE_VERSION) into bin/"
	$(call tools-build,golang.org/x/tools/cmd/deadcode)

$(KUBE_SCORE):
	@echo "installing kube-score $(KUBE_SCORE_VERSION) into bin/ (about 1.5 minutes when cold)"
	GOBIN=$(BIN)/.tmp CGO_ENABLED=0 go install github.com/zegl/kube-score/cmd/kube-score@$(KUBE_SCORE_VERSION)
	mv $(BIN)/.tmp/kube-score $@
