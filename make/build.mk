# Build: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

##@ Build

HOST_ARCH := $(shell go env GOARCH)
HOST_OS := $(shell go env GOOS)
# The platforms of the multi-arch image: pure Go, cross-compiled, nothing emulated.
PLATFORMS ?= linux/amd64 linux/arm64
VERSION_PKG := github.com/example/myoperator/internal/version
# GUESTBOOK_DEFAULT_IMAGE, when set, is compiled into the manager as the
# Guestbook's default image (a release stamps its image by digest there).
GUESTBOOK_DEFAULT_IMAGE ?=
MANAGER_LDFLAGS = $(if $(GUESTBOOK_DEFAULT_IMAGE),-X github.com/example/myoperator/apis/operator/v1alpha1.DefaultGuestbookImage=$(GUESTBOOK_DEFAULT_IMAGE))
# BUILD_DIR: where build-multiarch writes bin/linux_<arch>/'s binaries.
# make dist builds a release's binaries into bin/release/, so that they
# never replace the development build (bin/linux_<arch>/) that make
# docker-build, the demo and the e2e suite put into their images, maybe at
# the same moment (make ci runs its steps side by side).
BUILD_DIR ?= $(BIN)
# build-bin,ARCH,DIR,NAME,PKG[,LDFLAGS]: one binary for linux/ARCH into
# DIR/linux_ARCH/NAME, stamped.
define build-bin
GOOS=linux GOARCH=$(1) CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) $(5)" -o $(2)/linux_$(1)/$(3) $(4)
endef
# build-for,ARCH,DIR: the operator's two binaries, the Guestbook's server
# (guestbook.Dockerfile's) and the kubectl plugin (kubectl-myoperator,
# docs/plugin.md) for linux/ARCH into DIR/linux_ARCH/, stamped.
define build-for
$(call build-bin,$(1),$(2),manager,.,$(MANAGER_LDFLAGS))
$(call build-bin,$(1),$(2),bootstrap,./initcontainer)
$(call build-bin,$(1),$(2),guestbook-server,./guestbookserver)
$(call build-bin,$(1),$(2),kubectl-myoperator,./kubectl-myoperator)
endef

.PHONY: build
# The binaries are built aside (a folder of this make's own) and renamed
# into place: make ci runs steps side by side, two of them may run make
# build at once (the demo's, the e2e suite's), and a rename never shows a
# half-written binary to a step putting it into an image.
BUILD_TMP := $(BIN)/.build-$(shell echo $$PPID)
build: ## Build the manager, bootstrap, guestbook-server and kubectl-myoperator binaries (static, stamped with VERSION) into bin/ and bin/linux_<host arch>/.
	$(call build-for,$(HOST_ARCH),$(BUILD_TMP))
	@mkdir -p $(BIN)/linux_$(HOST_ARCH)
	@for b in manager bootstrap guestbook-server kubectl-myoperator; do \
	  mv -f $(BUILD_TMP)/linux_$(HOST_ARCH)/$$b $(BIN)/linux_$(HOST_ARCH)/$$b && \
	  ln -f $(BIN)/linux_$(HOST_ARCH)/$$b $(BUILD_TMP)/$$b && mv -f $(BUILD_TMP)/$$b $(BIN)/$$b || exit 1; \
	done; rm -rf $(BUILD_TMP)
	@# The plugin runs where kubectl does: on a Mac, bin/kubectl-myoperator is a Mac's (bin/linux_<arch>/ keeps the images' Linux one).
	$(if $(filter-out linux,$(HOST_OS)),$(call build-plugin,$(HOST_OS),$(HOST_ARCH),$(BIN)/kubectl-myoperator))

.PHONY: build-multiarch
build-multiarch: $(addprefix build-linux-,$(notdir $(PLATFORMS))) ## Cross-compile the four binaries for every platform in PLATFORMS into bin/linux_<arch>/.

# build-linux-ARCH (no such file, so it always runs): one platform's binaries.
build-linux-%:
	$(call build-for,$*,$(BUILD_DIR))

# build-guestbook-linux-ARCH: the Guestbook server alone, which make dist
# builds first: its image's digest is then the manager's default, so the
# manager is linked once, with it (not once before it and once after).
build-guestbook-linux-%:
	$(call build-bin,$*,$(BUILD_DIR),guestbook-server,./guestbookserver)

# The kubectl plugin's platforms: where kubectl users run it (make dist
# archives each, with a krew manifest).
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
# build-plugin,OS,ARCH,OUT: the kubectl plugin for OS/ARCH, stamped.
define build-plugin
GOOS=$(1) GOARCH=$(2) CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT)" -o $(3) ./kubectl-myoperator
endef

.PHONY: build-plugins
build-plugins: $(addprefix build-plugin-,$(subst /,_,$(PLUGIN_PLATFORMS))) ## Cross-compile the kubectl plugin for every platform in PLUGIN_PLATFORMS into bin/plugin/<os>_<arch>/ (kubectl-myoperator.exe on Windows).

# build-plugin-OS_ARCH (no such file, so it always runs): one platform's plugin.
build-plugin-%:
	$(call build-plugin,$(word 1,$(subst _, ,$*)),$(word 2,$(subst _, ,$*)),$(BUILD_DIR)/plugin/$*/kubectl-myoperator$(if $(filter windows_%,$*),.exe))
