# The operator's image: the static manager and bootstrap binaries, and the
# kubectl plugin that the Helm chart's test runs (kubectl-myoperator doctor,
# config/helm-test), built by
# `make build` (the host's architecture) or cross-compiled by `make
# docker-build-multiarch` into bin/linux_<arch>/ before the image (no base
# image can be pulled where the project builds, so the only stage starts FROM
# scratch; nothing else is in the image: no shell, no package manager).
# TARGETARCH is set by the build tool: the host's architecture, or each one
# of --platform; only files are copied, so no architecture is emulated. The
# default only quiets podman 4.3, which warns about an ARG without one; the
# tool's value wins over it.
FROM scratch
ARG TARGETARCH=amd64
# BINDIR: where linux_<arch>/ is (make dist: bin/release).
ARG BINDIR=bin
COPY ${BINDIR}/linux_${TARGETARCH}/manager /manager
COPY ${BINDIR}/linux_${TARGETARCH}/bootstrap /bootstrap
COPY ${BINDIR}/linux_${TARGETARCH}/kubectl-myoperator /kubectl-myoperator
# A numeric, non-root user, so that runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/manager"]
