# myoperator: build, generate, test and deploy. `make help` lists every target.

# Image to build, push and deploy (config/manager names the same one): the
# newest release's tag, which make release moves.
IMAGE_REPO ?= ghcr.io/example/myoperator
IMG ?= $(IMAGE_REPO):v0.3.0
# The version the binaries carry and the multi-arch images are tagged with:
# hack/version derives it from RELEASES.md and git (v0.1.0 for the release's
# own tree, v0.1.0-<commits since>-g<commit>[-dirty] after it). Evaluated
# once, and only by the targets that use it.
VERSION ?= $(eval VERSION := $$(shell go run ./hack/version))$(VERSION)
COMMIT ?= $(eval COMMIT := $$(shell git rev-parse HEAD 2>/dev/null || echo unknown))$(COMMIT)

# Pinned versions: everything the project builds or runs is named here once.
#
# The Go toolchain of every go command make runs (the go command fetches it
# from the Go module proxy into the module cache, 76 MB, on first use).
# govulncheck (make verify) found the shipped binaries of go1.26.8, the
# machines' own Go, linking 11 vulnerable symbols of the standard library
# (net/http, crypto/tls, crypto/x509, html/template, net/textproto), fixed
# in go1.26.9 and go1.26.10; go1.27.3 is the toolchain these machines may
# fetch that has the fixes. The tested binaries are the shipped ones, so
# the tests build with it too. A go command run by hand needs the same
# export (CONTRIBUTING.md); go.mod's toolchain line gives it to a go
# command left at its default, GOTOOLCHAIN=auto.
export GOTOOLCHAIN := go1.27.3
KUBE_VERSION ?= v1.37.2
# The oldest Kubernetes the operator supports (docs/install.md: "Supported Kubernetes
# versions"); make test-k8s-oldest runs the envtest suites on it.
KUBE_OLDEST_VERSION ?= v1.33.13
# Every supported Kubernetes minor, oldest to newest, each at the patch its
# hack/k8s module pins (hack/build-k8s.sh); make test-k8s-matrix runs the
# envtest suites on each.
KUBE_MATRIX_VERSIONS ?= v1.33.13 v1.34.12 v1.35.8 v1.36.5 v1.37.2
# kwok's version is the one hack/k8s/kube/go.mod pins, a tool directive
# there: hack/build-k8s.sh builds it with the control plane's libraries.
GOLANGCI_LINT_VERSION ?= v2.15.0
KUBE_SCORE_VERSION ?= v1.20.0
# The tools built in the tools' module (hack/tools/go.mod, as tool
# directives) take their versions from it (make/tools.mk says why):
# tools_version MODULE is the version that go.mod requires.
tools_version = $(shell awk '$$1 == "$(1)" {print $$2}' hack/tools/go.mod)
CONTROLLER_GEN_VERSION := $(call tools_version,sigs.k8s.io/controller-tools)
CYCLONEDX_GOMOD_VERSION := $(call tools_version,github.com/CycloneDX/cyclonedx-gomod)
# deadcode (golang.org/x/tools) finds shipped code that no binary reaches.
DEADCODE_VERSION := $(call tools_version,golang.org/x/tools)
# Helm, built from helm.sh/helm/v4, for the chart's tests and make dist.
HELM_VERSION := $(call tools_version,helm.sh/helm/v4)
# cert-manager's version is the one the tools' module (hack/tools/go.mod)
# requires, for the launcher hack/tools/certmanager; it names its folder.
CERT_MANAGER_VERSION := $(call tools_version,github.com/cert-manager/cert-manager)
# promtool's version is that of the Prometheus module hack/tools/go.mod
# requires (v0.316.0 is Prometheus 3.16.0); it names the binary.
PROMTOOL_VERSION := $(call tools_version,github.com/prometheus/prometheus)
# govulncheck (golang.org/x/vuln), in the tools' module, scans the shipped
# binaries (make vulncheck, in make verify) against the Go vulnerability
# database of one day: golang.org/x/vulndb at this pseudo-version, which
# the Go module proxy serves like any module (CONTRIBUTING.md: how to move
# it).
GOVULNCHECK_VERSION := $(call tools_version,golang.org/x/vuln)
VULNDB_VERSION ?= v0.0.0-20261105234957-e22db6528018
# cosign signs the release's files and images (hack/sign.sh), offline.
COSIGN_VERSION := $(call tools_version,github.com/sigstore/cosign/v3)
# krew, the kubectl plugin manager, and its manifest validator: a module
# of their own (hack/tools/krew/doc.go says why), for make dist's krew
# manifest and make test-dist's offline krew install.
KREW_VERSION := $(shell awk '$$1 == "sigs.k8s.io/krew" {print $$2}' hack/tools/krew/go.mod)

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
GOVULNCHECK := $(BIN)/govulncheck-$(GOVULNCHECK_VERSION)
KREW := $(BIN)/krew-$(KREW_VERSION)/krew
COSIGN := $(BIN)/cosign-$(COSIGN_VERSION)
KUBECTL ?= kubectl
# The shipped packages: what the four binaries are built from.
SHIPPED_RE := github.com/example/myoperator(/(apis|internal|reconcile|bootstrap|initcontainer|guestbookserver|kubectl-myoperator)(/.*)?)?$$
# Every API server a target starts runs in this network namespace, which has
# no route off the machine (see hack/netns.sh).
NETNS ?= myoperator-test
IN_NETNS := $(ROOT)/hack/netns.sh $(NETNS)

export KUBEBUILDER_ASSETS := $(K8S_BIN)
# Every go command the targets run compiles with the same flags as the
# shipped binaries and the Kubernetes builds (static, -trimpath), so that a
# package is compiled once per architecture and every later build, test,
# vet and lint of it hits the build cache: with the tests on cgo and
# absolute paths, the same dependencies were compiled twice on a fresh
# machine. Recipes that set GOFLAGS themselves add to it ("$$GOFLAGS ...").
# go test's own vet is off (-vet=off; other go commands ignore the flag):
# make lint runs govet with every analyzer of go vet's default set, a
# superset of go test's, on the same packages, test files and e2e tag
# included, while go test's vet type-checked again every dependency of
# every test package (1,267 of them) from source on a fresh machine.
# No DWARF (-gcflags=all=-dwarf=false, -ldflags=-w): the compiler and the
# linker skip writing debug information, which the shipped binaries strip
# anyway (-s -w) and nothing here reads (stack traces and pprof use the
# symbol table). A cold build of the manager took 436 CPU seconds instead
# of 492 (11 %, 5 Dec 2026), and every test binary links faster. To debug
# with a debugger, build with go build outside make.
GO_BUILD_FLAGS := -trimpath -vet=off -gcflags=all=-dwarf=false -ldflags=-w
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out $(GO_BUILD_FLAGS),$(GOFLAGS)) $(GO_BUILD_FLAGS))

##@ General

.PHONY: help
help: ## Show every target with one line each.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

# The targets, one file per concern, in the order make help lists them.
include $(ROOT)/make/demo.mk
include $(ROOT)/make/development.mk
include $(ROOT)/make/build.mk
include $(ROOT)/make/test.mk
include $(ROOT)/make/cluster.mk
include $(ROOT)/make/bench.mk
include $(ROOT)/make/image.mk
include $(ROOT)/make/deploy.mk
include $(ROOT)/make/tools.mk
