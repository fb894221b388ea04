#!/usr/bin/env bash
# Checks the operator's multi-arch image (make docker-build-multiarch):
# - the manifest list in ARCHIVE (an OCI archive) holds exactly one image for
#   each platform of PLATFORMS, and each image's config names that platform;
# - in each platform's image in podman's store (IMG-<arch>): the
#   architecture podman reports, the ELF machine of both binaries, and the
#   numeric non-root user 65532;
# - on the host's platform, both binaries start (--help, --version naming
#   VERSION) with a read-only root filesystem, no network and the container
#   limits that work on the project's machines. Other platforms' binaries are
#   only inspected: nothing is emulated.
# Then it removes those images and the archive, unless KEEP_IMAGES=1.
set -euo pipefail
IMG=${IMG:?set IMG}
ARCHIVE=${ARCHIVE:?set ARCHIVE}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
VERSION=${VERSION:?set VERSION}
run=(podman --cgroup-manager=cgroupfs --runtime /usr/sbin/runc)
host=$(go env GOARCH)
fail() { echo "test-image: $*" >&2; exit 1; }
if ! command -v jq >/dev/null; then
  [ "$(id -u)" = 0 ] || fail "needs jq (apt-get install jq)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
fi

# elf_machine FILE: the ELF e_machine of FILE (bytes 18-19, little endian).
elf_machine() {
  case $(od -An -tx1 -j18 -N2 "$1" | tr -d ' \n') in
    3e00) echo amd64 ;;
    b700) echo arm64 ;;
    *) echo "unknown($(od -An -tx1 -j18 -N2 "$1" | tr -d ' \n'))" ;;
  esac
}

work=$(mktemp -d)
# The images and the archive are this check's alone (docker-push-multiarch
# builds the images again): remove them, so that a check at every commit
# does not fill podman's store and bin/images/.
cleanup() {
  rm -rf "$work"
  if [ "${KEEP_IMAGES:-}" != 1 ]; then
    for platform in $PLATFORMS; do "${run[@]}" rmi "$IMG-${platform#*/}" >/dev/null 2>&1 || true; done
    rm -f "$ARCHIVE"
  fi
}
trap cleanup EXIT

# The manifest list, read from the archive as a registry would serve it.
mkdir "$work/oci" && tar -xf "$ARCHIVE" -C "$work/oci"
blob() { echo "$work/oci/blobs/${1/://}"; }
index=$(blob "$(jq -r '.manifests[0].digest' "$work/oci/index.json")")
[ "$(jq -r .mediaType "$index")" != null ] || fail "$ARCHIVE: no manifest list"
got=$(jq -r '[.manifests[].platform | "\(.os)/\(.architecture)"] | sort | join(" ")' "$index")
want=$(tr ' ' '\n' <<<"$PLATFORMS" | sort | paste -sd' ')
[ "$got" = "$want" ] || fail "manifest list holds '$got', want '$want'"
echo "test-image: manifest list ($(jq -r .mediaType "$index")) holds $got"
for platform in $PLATFORMS; do
  arch=${platform#*/}
  manifest=$(blob "$(jq -r --arg a "$arch" '.manifests[] | select(.platform.architecture == $a) | .digest' "$index")")
  config=$(blob "$(jq -r .config.digest "$manifest")")
  [ "$(jq -r '"\(.os)/\(.architecture)"' "$config")" = "$platform" ] || fail "$platform: the image's config says $(jq -c '{os, architecture}' "$config")"
  mkdir -p "$work/$arch"
  for layer in $(jq -r '.layers[].digest' "$manifest"); do tar -xf "$(blob "$layer")" -C "$work/$arch"; done
  for b in manager bootstrap kubectl-myoperator; do
    [ "$(elf_machine "$work/$arch/$b")" = "$arch" ] || fail "$platform: /$b in the list's image is $(elf_machine "$work/$arch/$b")"
  done
  echo "test-image: $platform in the list: config $platform, /manager, /bootstrap and /kubectl-myoperator are $arch ELF binaries"
done

# Each platform's image in podman's store.
for platform in $PLATFORMS; do
  arch=${platform#*/}
  image="$IMG-$arch"
  got=$("${run[@]}" image inspect "$image" --format '{{.Os}}/{{.Architecture}} {{.Config.User}}')
  [ "$got" = "$platform 65532:65532" ] || fail "$image: platform and user '$got', want '$platform 65532:65532'"
  # podman warns that a foreign platform's image cannot run here: it is
  # only created, to copy its binaries out.
  ctr=$("${run[@]}" create "$image" 2>"$work/create.err") || fail "$image: $(cat "$work/create.err")"
  for b in manager bootstrap kubectl-myoperator; do
    "${run[@]}" cp "$ctr:/$b" "$work/$arch-$b" >/dev/null
    [ "$(elf_machine "$work/$arch-$b")" = "$arch" ] || { "${run[@]}" rm "$ctr" >/dev/null; fail "$image: /$b is $(elf_machine "$work/$arch-$b")"; }
  done
  "${run[@]}" rm "$ctr" >/dev/null
  echo "test-image: $image: $platform, user 65532:65532, /manager, /bootstrap and /kubectl-myoperator are $arch ELF binaries"
done

# The host's platform runs.
image="$IMG-$host"
for bin in /manager /bootstrap; do
  flags=(run --rm --network none --read-only --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --entrypoint "$bin" "$image")
  out=$("${run[@]}" "${flags[@]}" --help 2>&1 || true)
  grep -q "^Usage of $bin" <<<"$out" || fail "$bin --help failed: $out"
  out=$("${run[@]}" "${flags[@]}" --version 2>&1) || fail "$bin --version failed: $out"
  [[ $out == "myoperator $VERSION (commit "* ]] || fail "$bin --version printed '$out', want myoperator $VERSION"
  echo "test-image: $image: $bin --help and --version ($out) run as 65532 on a read-only root filesystem"
done
# The plugin, which the chart's helm test runs (config/helm-test).
out=$("${run[@]}" run --rm --network none --read-only --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --entrypoint /kubectl-myoperator "$image" version 2>&1) || fail "/kubectl-myoperator version failed: $out"
[[ $out == "myoperator $VERSION (commit "* ]] || fail "/kubectl-myoperator version printed '$out', want myoperator $VERSION"
echo "test-image: $image: /kubectl-myoperator version ($out) runs as 65532 on a read-only root filesystem"
