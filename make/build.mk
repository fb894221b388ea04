# Build: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

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
