#!/usr/bin/env bash
# make release VERSION=x.y.z: cuts release x.y.z from HEAD's commit; a
# release candidate is x.y.z-rc.n (any semver pre-release).
#
# 1. Refuses, before changing anything, a version that is not x.y.z or
#    x.y.z-PRERELEASE, one
#    already in RELEASES.md, one not newer than the newest release, an empty
#    Unreleased section, a work tree with uncommitted changes to tracked
#    files (the record names HEAD's commit, so HEAD must be what is released),
#    and HEAD's code unless its evidence is recorded at that code
#    (hack/releasegate): make test-k8s-matrix passed on every version of
#    KUBE_MATRIX_VERSIONS, make reliability recorded every suite of
#    RELIABILITY_TESTS, a full make test-mutations caught every patch, and
#    make bench recorded a run.
# 2. RELEASES.md: the Unreleased notes become "## vx.y.z - <today>" with
#    "Commit: <HEAD>", under a fresh, empty Unreleased section; for a
#    release candidate they are copied and stay under Unreleased, so that
#    the final release lists them too.
# 3. The image tag of config/manager and the Makefile's IMG default become
#    vx.y.z; make bundle regenerates bundle/ (its CSV names the newest
#    release), make chart the Helm chart (its appVersion is the image's
#    tag) and make bundle-release writes bundle/releases/vx.y.z.
# 4. make dist VERSION=vx.y.z (hack/dist.sh): what the release publishes,
#    in dist/: install.yaml and install-certmanager.yaml with every image
#    by digest, the Helm chart, the bundle, the images of both platforms as OCI archives,
#    an SBOM of each binary and SHA256SUMS (RELEASE_IMAGES=0 builds no
#    image and names them by tag).
# 5. Prints what changed and the git commands that commit and tag it.
#
# It works on the repository of the current directory.
set -euo pipefail
want=${1:-}
root=$(git rev-parse --show-toplevel)
cd "$root"
say() { echo "release: $*"; }
fail() { echo "release: $*" >&2; exit 1; }
[ -n "$want" ] || fail "usage: make release VERSION=x.y.z (or x.y.z-rc.n)"

tool=$(mktemp -d)/version
trap 'rm -rf "$(dirname "$tool")"' EXIT
go build -o "$tool" ./hack/version
# The record's own checks first: version form, existing, older, no notes.
"$tool" -cut "$want" -dry-run >/dev/null || fail "refused (nothing changed)"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  git status --short --untracked-files=no >&2
  fail "refused: tracked files have uncommitted changes (above); the release records HEAD's commit, so commit or discard them first"
fi
previous=$("$tool" -newest)
head=$(git rev-parse HEAD)
# HEAD's code must carry its evidence, each kind recorded in its results
# file at that code: the version matrix, the reliability suites, the
# mutation suite and the quick benchmark (hack/releasegate says which
# records count, and prints every one that is missing).
if [ -d hack/releasegate ]; then
  go run ./hack/releasegate -versions "${KUBE_MATRIX_VERSIONS:?make release passes KUBE_MATRIX_VERSIONS}" \
    -reliability-tests "${RELIABILITY_TESTS:?make release passes RELIABILITY_TESTS}" || fail "refused (nothing changed)"
fi

"$tool" -cut "$want"
version=$("$tool" -newest)

# The release's image tag, where the tree names it: config/manager (and so
# config/default and the bundle) and the Makefile's IMG default.
sed -i "s/^\(  newTag: \)$previous\$/\1$version/" config/manager/kustomization.yaml
grep -q "^  newTag: $version\$" config/manager/kustomization.yaml || fail "config/manager/kustomization.yaml: no 'newTag: $previous' to move to $version"
sed -i "s/^\(IMG ?= \$(IMAGE_REPO):\)$previous\$/\1$version/" Makefile
grep -q "^IMG ?= \$(IMAGE_REPO):$version\$" Makefile || fail "Makefile: no 'IMG ?= \$(IMAGE_REPO):$previous' to move to $version"
say "config/manager and the Makefile's IMG: image tag $previous -> $version"

make --no-print-directory bundle >/dev/null
say "bundle/: regenerated for $version"
if make -n chart >/dev/null 2>&1; then
  make --no-print-directory chart >/dev/null
  say "charts/myoperator: regenerated for $version"
fi
if make -n bundle-release VERSION="${version#v}" >/dev/null 2>&1; then
  make --no-print-directory bundle-release VERSION="${version#v}"
else
  say "no make bundle-release target in this tree: no release bundle written"
fi

if make -n dist VERSION="$version" >/dev/null 2>&1; then
  RELEASE_IMAGES=${RELEASE_IMAGES:-1} make --no-print-directory dist VERSION="$version" COMMIT="$head"
else
  say "no make dist target in this tree: no dist/ written"
fi

echo
say "$version recorded from $head; changed:"
git status --short
cat <<EOT

Review the changes (git diff), then commit the record and tag the released commit:

  git add RELEASES.md Makefile config/manager/kustomization.yaml bundle bundle.Dockerfile charts
  git commit -m "Release $version"
  git tag -a $version $head -m "myoperator $version"

and publish the images (each archive in dist/ is the manifest list of
every platform, pushed as it is so that its digest stays the one
install.yaml, the chart and the bundle name; a registry other than
ghcr.io/example rewrites them), the tag, and dist/'s files with the release:

  make release-push REGISTRY=<registry>/<path>
  git push origin main $version
EOT
