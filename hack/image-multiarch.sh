#!/usr/bin/env bash
# Builds the operator's image for every platform in PLATFORMS from the
# binaries make cross-compiled into bin/linux_<arch>/, tags each one
# IMAGE-<arch> in podman's store, and writes them as one manifest list (an
# OCI image index) to DEST:
#
#   hack/image-multiarch.sh IMAGE [DEST]
#
# DOCKERFILE and BINARIES choose another image of the project: the
# Guestbook's server is DOCKERFILE=guestbook.Dockerfile
# BINARIES=guestbook-server.
#
# DEST defaults to the OCI archive bin/images/<name>_<tag>.tar; a
# docker://registry/name:tag pushes the list instead. The manifest list is
# made, pushed and removed again in one go: podman 4.3 (Debian's) cannot list
# the images of a store that holds a manifest list ("podman images" fails on
# "fetching target platform image selected from image index"), which would
# break every other podman user of the machine.
set -euo pipefail
IMAGE=${1:?usage: hack/image-multiarch.sh IMAGE [DEST]}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
DOCKERFILE=${DOCKERFILE:-Dockerfile}
BINARIES=${BINARIES:-manager bootstrap kubectl-myoperator}
# BINDIR: the folder, under the repository, holding linux_<arch>/ (make
# dist builds a release into bin/release); the Dockerfiles take it as a
# build argument.
BINDIR=${BINDIR:-bin}
root=$(cd "$(dirname "$0")/.." && pwd)
podman=(podman --cgroup-manager=cgroupfs --runtime /usr/sbin/runc)
name=${IMAGE##*/}
DEST=${2:-oci-archive:$root/bin/images/${name//:/_}.tar}

for platform in $PLATFORMS; do
  arch=${platform#*/}
  for b in $BINARIES; do
    [ -f "$root/$BINDIR/linux_$arch/$b" ] || { echo "image-multiarch: $BINDIR/linux_$arch/$b missing: run make build-multiarch" >&2; exit 1; }
  done
  "${podman[@]}" build -q --platform "$platform" --build-arg BINDIR="$BINDIR" -f "$root/$DOCKERFILE" -t "$IMAGE-$arch" "$root" >/dev/null
  echo "image-multiarch: $IMAGE-$arch ($platform)"
done

list="$IMAGE-list-$$"
cleanup() { "${podman[@]}" manifest rm "$list" >/dev/null 2>&1 || true; }
trap cleanup EXIT
"${podman[@]}" manifest create "$list" >/dev/null
for platform in $PLATFORMS; do
  "${podman[@]}" manifest add "$list" "containers-storage:$IMAGE-${platform#*/}" >/dev/null
done
if [[ $DEST == oci-archive:* ]]; then
  mkdir -p "$(dirname "${DEST#oci-archive:}")"
  rm -f "${DEST#oci-archive:}"
fi
"${podman[@]}" manifest push -q --all "$list" "$DEST"
echo "image-multiarch: manifest list of $IMAGE ($PLATFORMS) -> $DEST"
