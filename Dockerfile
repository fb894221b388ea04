# The operator's image: the static manager and bootstrap binaries, built by
# `make build` before the image (no base image can be pulled where the
# project builds, so the only stage starts FROM scratch; nothing else is in
# the image: no shell, no package manager).
FROM scratch
COPY bin/manager /manager
COPY bin/bootstrap /bootstrap
# A numeric, non-root user, so that runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/manager"]
