# Container image: included by the Makefile, which defines the versions, paths and
# shared variables these targets use (make help lists every target).

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
	BINDIR=$(patsubst $(ROOT)/%,%,$(abspath $(BUILD_DIR))) PLATFORMS="$(PLATFORMS)" hack/image-multiarch.sh $(MULTIARCH_IMG) $(MULTIARCH_DEST)

.PHONY: docker-push-multiarch
docker-push-multiarch: ## Push the manifest list of MULTIARCH_IMG's platform images (after docker-build-multiarch) to its registry.
	hack/ensure-podman.sh
	PLATFORMS="$(PLATFORMS)" hack/image-multiarch.sh $(MULTIARCH_IMG) docker://$(MULTIARCH_IMG)

.PHONY: release
release: ## Cut release VERSION=x.y.z (or x.y.z-rc.n) from HEAD, once its evidence is recorded at its code (hack/releasegate): RELEASES.md, image tags, bundle, multi-arch images; prints the git commands (hack/release.sh).
	@$(if $(filter command line environment,$(origin VERSION)),,echo "release: usage: make release VERSION=x.y.z (or x.y.z-rc.n)" >&2; exit 1)
	KUBE_MATRIX_VERSIONS="$(KUBE_MATRIX_VERSIONS)" RELIABILITY_TESTS="$(RELIABILITY_TESTS)" hack/release.sh $(VERSION)

.PHONY: dist
dist: $(CYCLONEDX_GOMOD) $(HELM) $(KREW) $(COSIGN) ## Write this tree's release files into dist/: install.yaml, install-certmanager.yaml, Helm chart, bundle, image archives by digest, SBOMs, SHA256SUMS, each signed with its provenance (COSIGN_KEY, hack/sign.sh); as this tree's version, or VERSION=x.y.z only when RELEASES.md recorded x.y.z from this tree (hack/dist.sh; make release runs it).
	CYCLONEDX=$(CYCLONEDX_GOMOD) HELM=$(HELM) KREW=$(KREW) COSIGN=$(COSIGN) PLUGIN_PLATFORMS="$(PLUGIN_PLATFORMS)" IMAGE_REPO=$(IMAGE_REPO) GUESTBOOK_IMG=$(GUESTBOOK_IMG) PLATFORMS="$(PLATFORMS)" hack/dist.sh $(if $(filter command line environment,$(origin VERSION)),$(VERSION))

# REGISTRY is where make release-push sends dist/'s images (host/path).
REGISTRY ?=

.PHONY: release-push
release-push: $(COSIGN) ## Push dist/'s image archives to REGISTRY=host/path as they are (same digests), point dist/'s manifests at them (hack/tools/registry), then sign the images there and attach their provenance and SBOMs, and sign the rewritten files (COSIGN_KEY, hack/sign.sh).
	@$(if $(REGISTRY),,echo "release-push: set REGISTRY=host/path" >&2; exit 1)
	go -C hack/tools/registry run . push -to $(REGISTRY) $(if $(REGISTRY_INSECURE),-insecure) -from $(patsubst %/,%,$(dir $(IMAGE_REPO))) $(ROOT)/dist
	COSIGN=$(COSIGN) PLATFORMS="$(PLATFORMS)" PLUGIN_PLATFORMS="$(PLUGIN_PLATFORMS)" hack/sign.sh --registry $(REGISTRY) $(if $(REGISTRY_INSECURE),--insecure)

.PHONY: test-dist
test-dist: $(CYCLONEDX_GOMOD) $(HELM) $(KREW) $(COSIGN) ## Check a release's files: make dist with images of this tree, as its version; make dist refusing a release not cut from it; SHA256SUMS, every signature and provenance (cosign verify), digests in install.yaml and the manager, make release-push to a loopback registry, podman pulls by digest (hack/test-dist.sh).
	HELM=$(HELM) KREW=$(KREW) COSIGN=$(COSIGN) PLUGIN_PLATFORMS="$(PLUGIN_PLATFORMS)" hack/test-dist.sh

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
