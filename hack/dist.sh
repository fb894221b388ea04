#!/usr/bin/env bash
# Writes what release VERSION publishes into dist/ (not committed):
#
#   hack/dist.sh [X.Y.Z[-rc.N]]
#
# The files are this tree's, under the version hack/version -dist gives:
# the release asked for only when it was recorded from HEAD's tree (make
# release writes them right after recording it), this tree's own version
# (v0.2.0-424-g274aa16, say) when none is asked for; any other is refused,
# with the command that builds that release from its own commit, so that
# no file says it is a release it was not built from.
#
#   install.yaml              config/default, every image by digest
#   install-certmanager.yaml  the same with cert-manager issuing the webhook
#                             certificate (config/certmanager-default)
#   myoperator-V.tgz          the Helm chart (hack/helmchart from the same
#                             manifests as install.yaml), packaged by helm
#   myoperator-bundle_V.tar.gz          the release's frozen OLM bundle
#                                       (a development build's, generated:
#                                       it replaces the newest release),
#                                       its CSV naming the images by digest
#   myoperator-bundle_V.oci.tar         the same files as the bundle image
#                                       OLM's catalogs take
#                                       (bundle.Dockerfile), an OCI index
#   myoperator_V.oci.tar                the manager's image (manager and
#                                       bootstrap), linux/amd64 and arm64,
#                                       as an OCI image index
#   myoperator-guestbook_T.oci.tar      the Guestbook server's image, same
#   kubectl-myoperator_<os>_<arch>.tar.gz (.zip on Windows)
#                                       the kubectl plugin (docs/plugin.md)
#                                       with the LICENSE and its completion
#                                       script for kubectl, for each of
#                                       PLUGIN_PLATFORMS
#   krew/myoperator.yaml      the plugin's krew manifest: each archive's
#                             URL on the release page and sha256, checked
#                             by krew's validate-krew-manifest
#   sbom/<binary>_linux_<arch>.cdx.json a CycloneDX SBOM of each binary
#   images.txt                every image reference the manifests use
#   SHA256SUMS                the checksum of every file above
#   signatures/               each file's cosign signature, their SLSA
#                             provenance signed, the public key
#                             (hack/sign.sh)
#
# The Guestbook's image is built first: its reference by digest becomes the
# default the manager binary is built with (GUESTBOOK_DEFAULT_IMAGE) and the
# manager's GUESTBOOK_IMAGE in the manifests, so that a release runs exactly
# the Guestbook image it ships. Then the manager's image, whose digest
# install.yaml names.
#
# RELEASE_IMAGES=0 builds no image (make release's tests): the binaries are
# built for the host's architecture only, for their SBOMs, and the
# manifests name the images by tag.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { echo "dist: $*"; }
fail() { echo "dist: $*" >&2; exit 1; }
# When the build started, for its provenance (hack/sign.sh).
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
version=$(go run ./hack/version -dist ${1:+"$1"}) || fail "refused (nothing written)"
say "writing this tree's files as $version"

IMAGE_REPO=${IMAGE_REPO:-ghcr.io/example/myoperator}
# The Guestbook server's image keeps its own version (guestbook.Dockerfile's
# GUESTBOOK_IMG in the Makefile): it moves when guestbookserver/ changes.
GUESTBOOK_IMG=${GUESTBOOK_IMG:-ghcr.io/example/myoperator-guestbook:v1.0.0}
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
CYCLONEDX=${CYCLONEDX:?set CYCLONEDX to the cyclonedx-gomod binary (make dist builds it)}
KREW=${KREW:?set KREW to the krew binary, validate-krew-manifest beside it (make dist builds them)}
PLUGIN_PLATFORMS=${PLUGIN_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
# Where the krew manifest says the archives are: the release's page.
RELEASE_URL=${RELEASE_URL:-https://github.com/example/myoperator/releases/download}
HELM=${HELM:?set HELM to the helm binary (make dist builds it)}
COSIGN=${COSIGN:?set COSIGN to the cosign binary (make dist builds it)}
images=${RELEASE_IMAGES:-1}
commit=$(git rev-parse HEAD)
dist=$root/dist
# The release's binaries go to bin/release/linux_<arch>/, never over the
# development build in bin/linux_<arch>/ (make build-multiarch BUILD_DIR).
bindir=bin/release

rm -rf "$dist"
mkdir -p "$dist/sbom"

# index_digest ARCHIVE: the digest of the OCI image index an archive holds,
# which a registry serves for it once pushed as it is.
index_digest() { hack/ociarchive.py digest "$1"; }

guestbook_ref=$GUESTBOOK_IMG
# The manager's image as install.yaml names it: by digest once built.
manager_digest=
if [ "$images" = 1 ]; then
  hack/ensure-podman.sh
  make --no-print-directory $(for p in $PLATFORMS; do echo "build-guestbook-linux-${p#*/}"; done) BUILD_DIR="$root/$bindir" VERSION="$version" COMMIT="$commit"
  gb_archive=$dist/$(basename "${GUESTBOOK_IMG//:/_}").oci.tar
  BINDIR=$bindir DOCKERFILE=guestbook.Dockerfile BINARIES=guestbook-server PLATFORMS="$PLATFORMS" \
    hack/image-multiarch.sh "$GUESTBOOK_IMG" "oci-archive:$gb_archive"
  guestbook_ref=$GUESTBOOK_IMG@$(index_digest "$gb_archive")
  # The others, the manager with the Guestbook's image by digest as its
  # default (the Guestbook server, up to date, is not linked again).
  make --no-print-directory build-multiarch BUILD_DIR="$root/$bindir" VERSION="$version" COMMIT="$commit" PLATFORMS="$PLATFORMS" GUESTBOOK_DEFAULT_IMAGE="$guestbook_ref"
  mgr_archive=$dist/$(basename "$IMAGE_REPO")_$version.oci.tar
  BINDIR=$bindir PLATFORMS="$PLATFORMS" hack/image-multiarch.sh "$IMAGE_REPO:$version" "oci-archive:$mgr_archive"
  manager_digest=$(index_digest "$mgr_archive")
  arches=$(for p in $PLATFORMS; do echo "${p#*/}"; done)
else
  say "RELEASE_IMAGES=0: no images; binaries for $(go env GOARCH) only, images named by tag"
  make --no-print-directory "build-linux-$(go env GOARCH)" BUILD_DIR="$root/$bindir" VERSION="$version" COMMIT="$commit" GUESTBOOK_DEFAULT_IMAGE="$guestbook_ref"
  arches=$(go env GOARCH)
fi

for arch in $arches; do
  for b in manager bootstrap guestbook-server kubectl-myoperator; do
    "$CYCLONEDX" bin -json -version "$version" -output "$dist/sbom/${b}_linux_$arch.cdx.json" "$bindir/linux_$arch/$b" 2>/dev/null
    # The binary's own licence, the repository's LICENSE, which
    # cyclonedx-gomod reads only for modules in the module cache.
    python3 - "$dist/sbom/${b}_linux_$arch.cdx.json" <<'PY'
import json, sys
path = sys.argv[1]
bom = json.load(open(path))
bom["metadata"]["component"]["licenses"] = [{"license": {"id": "Apache-2.0"}}]
json.dump(bom, open(path, "w"), indent=2)
PY
  done
done
say "SBOMs (CycloneDX): $(ls "$dist/sbom" | tr '\n' ' ')"

# The kubectl plugin for every platform kubectl users run, each archived
# with the LICENSE as krew takes it (tar.gz, zip on Windows), byte for
# byte the same for the same commit: fixed owners, order and times (the
# commit's), no gzip name or time.
[ "$images" = 1 ] || PLUGIN_PLATFORMS="$(go env GOOS)/$(go env GOARCH)"
# A Linux plugin is the one the images carry, built above with the same
# flags: copied where build-plugins writes it, go build finds it up to
# date and does not link it again.
for p in $PLUGIN_PLATFORMS; do
  [ "${p%/*}" = linux ] && [ -f "$bindir/linux_${p#*/}/kubectl-myoperator" ] || continue
  mkdir -p "$bindir/plugin/linux_${p#*/}" && cp -p "$bindir/linux_${p#*/}/kubectl-myoperator" "$bindir/plugin/linux_${p#*/}/kubectl-myoperator"
done
make --no-print-directory build-plugins BUILD_DIR="$root/$bindir" VERSION="$version" COMMIT="$commit" PLUGIN_PLATFORMS="$PLUGIN_PLATFORMS"
epoch=$(git log -1 --format=%ct "$commit")
krew_platforms=
for p in $PLUGIN_PLATFORMS; do
  # The completion script kubectl runs for "kubectl myoperator <TAB>".
  os=${p%/*} arch=${p#*/} exe=kubectl-myoperator complete=kubectl_complete-myoperator
  [ "$os" = windows ] && exe=kubectl-myoperator.exe complete=kubectl_complete-myoperator.cmd
  stage=$(mktemp -d "$root/bin/dist-plugin.XXXXXX")
  cp "$bindir/plugin/${os}_$arch/$exe" LICENSE "kubectl-myoperator/$complete" "$stage/"
  touch -d "@$epoch" "$stage/$exe" "$stage/LICENSE" "$stage/$complete"
  if [ "$os" = windows ]; then
    archive=kubectl-myoperator_${os}_$arch.zip
    python3 - "$dist/$archive" "$stage" "$exe" "$epoch" "$complete" <<'PY'
import sys, time, zipfile
out, stage, exe, epoch, complete = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted([exe, "LICENSE", complete]):
        info = zipfile.ZipInfo(name, time.gmtime(epoch)[:6])
        info.external_attr = (0o644 if name == "LICENSE" else 0o755) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, open(f"{stage}/{name}", "rb").read())
PY
  else
    archive=kubectl-myoperator_${os}_$arch.tar.gz
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$stage" -cf - "$exe" LICENSE "$complete" | gzip -n >"$dist/$archive"
  fi
  rm -rf "$stage"
  krew_platforms+="  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $RELEASE_URL/$version/$archive
    sha256: $(sha256sum "$dist/$archive" | cut -d' ' -f1)
    bin: $exe
    files:
    - from: $exe
      to: .
    - from: $complete
      to: .
    - from: LICENSE
      to: .
"
done
mkdir -p "$dist/krew"
cat >"$dist/krew/myoperator.yaml" <<EOT
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: myoperator
spec:
  version: $version
  homepage: https://github.com/example/myoperator
  shortDescription: Check and fix a myoperator installation
  description: |
    kubectl myoperator status summarises a myoperator installation: the
    operator's pods and leader, its webhooks and certificate, the Drinks,
    Guestbooks and the OperatorConfig. kubectl myoperator doctor checks
    what the operator must keep true and prints the command that fixes each
    finding. kubectl myoperator convert converts Drink manifests between
    API versions without a cluster, losslessly.
  platforms:
$krew_platforms
EOT
# -skip-install: its install would fetch each archive from the release
# page; make test-dist installs the host's from dist/, offline.
"$(dirname "$KREW")/validate-krew-manifest" -skip-install -manifest "$dist/krew/myoperator.yaml" >/dev/null 2>"$root/bin/dist-krew-validate.log" ||
  { cat "$root/bin/dist-krew-validate.log" >&2; fail "krew's validate-krew-manifest refused dist/krew/myoperator.yaml (above)"; }
say "kubectl plugin: $(cd "$dist" && ls kubectl-myoperator_* | tr '\n' ' '); krew/myoperator.yaml (validate-krew-manifest: valid)"

# The manifests: config/default (and its cert-manager form) with the
# manager's image and the Guestbook default (GUESTBOOK_IMAGE) of this release.
mkdir -p "$root/bin"
overlay=$(mktemp -d "$root/bin/dist-overlay.XXXXXX")
trap 'rm -rf "$overlay"' EXIT
render() { # render BASE OUT: BASE with this release's images, kept in $overlay/<base's name>
  mkdir -p "$overlay/${1##*/}"
  cat >"$overlay/${1##*/}/kustomization.yaml" <<EOT
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../../../$1
images:
- name: ghcr.io/example/myoperator
  newName: $IMAGE_REPO
$(if [ -n "$manager_digest" ]; then echo "  digest: $manager_digest"; else echo "  newTag: $version"; fi)
patches:
- target:
    kind: Deployment
    name: myoperator-controller-manager
  patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: myoperator-controller-manager
    spec:
      template:
        spec:
          containers:
          - name: manager
            env:
            - name: GUESTBOOK_IMAGE
              value: $guestbook_ref
EOT
  kubectl kustomize "$overlay/${1##*/}" >"$2"
}
render config/default "$dist/install.yaml"
render config/certmanager-default "$dist/install-certmanager.yaml"
grep -h 'image: ' "$dist/install.yaml" | sed 's/^ *- *//; s/^ *image: //' | sort -u >"$dist/images.txt"
echo "$guestbook_ref" >>"$dist/images.txt"
manager_ref=$IMAGE_REPO${manager_digest:+@$manager_digest}
[ -n "$manager_digest" ] || manager_ref=$IMAGE_REPO:$version
grep -A1 -- "- name: GUESTBOOK_IMAGE" "$dist/install.yaml" | grep -q "value: $guestbook_ref\$" || fail "install.yaml: the manager's GUESTBOOK_IMAGE is not $guestbook_ref"
grep -qx "$manager_ref" "$dist/images.txt" || fail "install.yaml does not name the manager's image $manager_ref: $(tr '\n' ' ' <"$dist/images.txt")"

# The Helm chart: generated from the same overlay as install.yaml, so its
# default values install exactly that, images by digest included.
go run ./hack/helmchart -base "$overlay/default" -out "$overlay/chart/myoperator" -version "$version"
HELM_CACHE_HOME=$overlay/helm HELM_CONFIG_HOME=$overlay/helm HELM_DATA_HOME=$overlay/helm \
  "$HELM" package "$overlay/chart/myoperator" --destination "$dist" >/dev/null
[ -f "$dist/myoperator-${version#v}.tgz" ] || fail "helm package wrote no myoperator-${version#v}.tgz"

bundle=bundle/releases/$version
if [ -d "$bundle" ]; then
  cp -r "$bundle" "$overlay/bundle"
else
  # No release has this version (make dist of a development tree): its
  # bundle is generated, replacing the newest release's.
  go run ./hack/bundle --version "${version#v}" --out "$overlay/bundle" >/dev/null
fi
# The frozen bundle names the images by tag (it is written before they are
# built; a development bundle by config/manager's tag, the newest
# release's); the published one names them as install.yaml does.
csv=$(ls "$overlay"/bundle/manifests/*.clusterserviceversion.yaml)
sed -i "s|$IMAGE_REPO:v[0-9][^\"' ]*|$manager_ref|g; s|$GUESTBOOK_IMG\b|$guestbook_ref|g" "$csv"
grep -q "image: $manager_ref\$" "$csv" || fail "the bundle's CSV does not name $manager_ref"
tar -czf "$dist/myoperator-bundle_$version.tar.gz" -C "$overlay/bundle" manifests metadata
if [ "$images" = 1 ]; then
  # The same bundle as the image a catalog (opm) takes: bundle.Dockerfile,
  # FROM scratch with OLM's labels, over these very files. An image index
  # of one platform, as make release-push and registries take the others;
  # nothing in it runs, so one platform serves them all.
  mkdir -p "$overlay/bundle-image/bundle"
  cp -r "$overlay/bundle/manifests" "$overlay/bundle/metadata" "$overlay/bundle-image/bundle/"
  podman=(podman --cgroup-manager=cgroupfs --runtime /usr/sbin/runc)
  bundle_image=$IMAGE_REPO-bundle:$version
  "${podman[@]}" build -q -f "$root/bundle.Dockerfile" -t "$bundle_image-image" "$overlay/bundle-image" >/dev/null
  "${podman[@]}" manifest rm "$bundle_image" >/dev/null 2>&1 || true
  "${podman[@]}" manifest create "$bundle_image" >/dev/null
  "${podman[@]}" manifest add "$bundle_image" "containers-storage:$bundle_image-image" >/dev/null
  "${podman[@]}" manifest push -q --all "$bundle_image" "oci-archive:$dist/myoperator-bundle_$version.oci.tar"
  "${podman[@]}" manifest rm "$bundle_image" >/dev/null
  "${podman[@]}" rmi "$bundle_image-image" >/dev/null 2>&1 || true
  say "OLM bundle image: myoperator-bundle_$version.oci.tar ($bundle_image, bundle.Dockerfile's labels)"
fi

(cd "$dist" && find . -path ./signatures -prune -o -type f ! -name SHA256SUMS -print | sed 's#^\./##' | sort | xargs sha256sum >SHA256SUMS)
say "dist/ for $version ($(wc -l <"$dist/SHA256SUMS") files, SHA256SUMS):"
(cd "$dist" && while read -r sum file; do printf '  %-48s %10s  sha256:%s\n' "$file" "$(stat -c %s "$file")" "$sum"; done <SHA256SUMS)
say "images: $(tr '\n' ' ' <"$dist/images.txt")"
# Each file signed, with the provenance of them all (dist/signatures/);
# the images are signed where make release-push puts them.
DIST_VERSION=$version DIST_STARTED=$started COSIGN=$COSIGN PLATFORMS=$PLATFORMS PLUGIN_PLATFORMS=$PLUGIN_PLATFORMS hack/sign.sh
