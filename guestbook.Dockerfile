# The Guestbook's image (OperatorConfig guestbook.image by default,
# ghcr.io/example/myoperator-guestbook): the static guestbook-server binary
# (guestbookserver/), built by `make build` (the host's architecture) or
# cross-compiled by `make build-multiarch` into bin/linux_<arch>/ before the
# image (`make guestbook-image`). As the operator's Dockerfile: no base image
# can be pulled where the project builds, so the only stage starts FROM
# scratch, and nothing else is in the image (no shell, no package manager).
# TARGETARCH is set by the build tool: the host's architecture, or each one
# of --platform; only files are copied, so no architecture is emulated. The
# default only quiets podman 4.3, which warns about an ARG without one; the
# tool's value wins over it.
FROM scratch
ARG TARGETARCH=amd64
# BINDIR: where linux_<arch>/ is (make dist: bin/release).
ARG BINDIR=bin
COPY ${BINDIR}/linux_${TARGETARCH}/guestbook-server /guestbook-server
# A numeric, non-root user, so that runAsNonRoot can verify it; the server
# writes nothing, so the root filesystem can be read-only.
USER 65532:65532
ENTRYPOINT ["/guestbook-server"]
