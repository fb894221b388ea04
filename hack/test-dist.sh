#!/usr/bin/env bash
# Checks a release's files end to end (make test-dist): make dist refusing
# the newest release (HEAD is not its tree; its own commit builds it, the
# refusal says how) and a version no release has, then make dist with
# images of this tree, as its version (hack/version -dist), then
# - every file of dist/ holds its SHA256SUMS line;
# - the kubectl plugin is archived for every platform of PLUGIN_PLATFORMS
#   with the LICENSE, its binary that platform's, each archive in the krew
#   manifest by its sha256; krew installs the host's offline from the
#   manifest, and kubectl myoperator then prints the release's version;
# - install.yaml names the manager's image by the digest of its archive,
#   and the manager's GUESTBOOK_IMAGE (the default guestbook.image) is the
#   Guestbook image's archive by digest, which the manager binary carries
#   too;
# - make release-push sends both archives to a registry on loopback
#   (hack/tools/registry serve), install.yaml then names the registry, and
#   podman pulls each image from it by that digest, for every platform;
# - the Helm chart and the bundle's CSV name the same images as
#   install.yaml, before and after the push, and helm template of the
#   chart renders install.yaml's Deployment image;
# - the OLM bundle image carries bundle.Dockerfile's labels and exactly
#   the bundle tarball's files, and podman pulls it from the registry;
# - the manager's image passes make test-image's checks (hack/test-image.sh).
# Everything it starts listens on loopback and is stopped at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail() { echo "test-dist: $*" >&2; exit 1; }
say() { echo "test-dist: $*"; }
podman=(podman --cgroup-manager=cgroupfs --runtime /usr/sbin/runc)
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
HELM=${HELM:?set HELM to the helm binary (make test-dist builds it)}

# make dist never packs this tree as a release it was not cut from.
newest=$(go run ./hack/version -newest)
if [ "$(go run ./hack/version)" != "$newest" ]; then
  mkdir -p dist && echo "left by test-dist" >dist/.before-refusal
  out=$(make --no-print-directory dist VERSION="$newest" 2>&1) && fail "make dist VERSION=$newest packed this tree as $newest, which was released from another: $out"
  grep -q "was released from .*make dist would pack this tree's code as $newest.* git worktree add " <<<"$out" ||
    fail "make dist VERSION=$newest was refused without naming the release's commit and the command that builds it: $out"
  [ -f dist/.before-refusal ] || fail "make dist VERSION=$newest refused, but only after it had emptied dist/"
  rm -f dist/.before-refusal
  say "make dist VERSION=$newest refused: $(grep -o "version: .*" <<<"$out" | head -1)"
fi
out=$(make --no-print-directory dist VERSION=999.0.0 2>&1) && fail "make dist VERSION=999.0.0 packed this tree as a version no release has: $out"
grep -q "v999.0.0 is no release of the record" <<<"$out" || fail "make dist VERSION=999.0.0 refused, but not for having no release: $out"
say "make dist VERSION=999.0.0 refused: $(grep -o "version: .*" <<<"$out" | head -1)"

version=$(go run ./hack/version -dist)
make --no-print-directory dist RELEASE_IMAGES=1 >"$root/bin/test-dist.log" 2>&1 ||
  { tail -20 "$root/bin/test-dist.log"; fail "make dist ($version) failed (bin/test-dist.log)"; }
grep -q "^dist: writing this tree's files as $version\$" "$root/bin/test-dist.log" || fail "make dist did not write the tree's files as $version (bin/test-dist.log)"
(cd dist && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not hold"
say "make dist $version: $(wc -l <dist/SHA256SUMS) files, SHA256SUMS holds"
# The repository's licence, named where each ecosystem reads it.
for sbom in dist/sbom/*.cdx.json; do
  [ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["metadata"]["component"]["licenses"][0]["license"]["id"])' "$sbom")" = Apache-2.0 ] ||
    fail "$sbom does not name the licence Apache-2.0 for its binary"
done
tar -xzOf "dist/myoperator-${version#v}.tgz" myoperator/Chart.yaml | grep -q '^  artifacthub.io/license: Apache-2.0$' || fail "the chart does not name its licence"
say "licence Apache-2.0 in the SBOMs and the chart"
# The kubectl plugin: an archive per platform of PLUGIN_PLATFORMS, listed
# in SHA256SUMS, holding the LICENSE and the binary of that platform
# (hack/binformat.py reads its format and machine), and the krew manifest
# naming each archive by its sha256.
KREW=${KREW:?set KREW to the krew binary (make test-dist builds it)}
PLUGIN_PLATFORMS=${PLUGIN_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
work=$(mktemp -d "$root/bin/test-dist-plugin.XXXXXX")
n=0
for p in $PLUGIN_PLATFORMS; do
  os=${p%/*} arch=${p#*/}
  if [ "$os" = windows ]; then
    archive=kubectl-myoperator_${p/\//_}.zip exe=kubectl-myoperator.exe complete=kubectl_complete-myoperator.cmd
  else
    archive=kubectl-myoperator_${p/\//_}.tar.gz exe=kubectl-myoperator complete=kubectl_complete-myoperator
  fi
  grep -q " $archive\$" dist/SHA256SUMS || fail "SHA256SUMS does not list $archive"
  mkdir -p "$work/$os-$arch"
  if [ "$os" = windows ]; then
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "dist/$archive" "$work/$os-$arch"
  else
    tar -xzf "dist/$archive" -C "$work/$os-$arch"
  fi
  [ "$(cd "$work/$os-$arch" && ls | tr '\n' ' ')" = "$(printf '%s\n' LICENSE "$exe" "$complete" | LC_ALL=C sort | tr '\n' ' ')" ] || fail "$archive holds $(cd "$work/$os-$arch" && ls | tr '\n' ' '), want $exe, $complete and LICENSE"
  cmp -s "$work/$os-$arch/LICENSE" LICENSE || fail "$archive: its LICENSE is not the repository's"
  got=$(python3 hack/binformat.py "$work/$os-$arch/$exe")
  [ "$got" = "$os/$arch" ] || fail "$archive: $exe is a $got binary, not $os/$arch"
  sum=$(sha256sum "dist/$archive" | cut -d' ' -f1)
  grep -A1 "uri: .*/$version/$archive\$" dist/krew/myoperator.yaml | grep -q "sha256: $sum\$" || fail "dist/krew/myoperator.yaml does not name $archive with its sha256 $sum"
  n=$((n + 1))
done
[ "$(ls dist/kubectl-myoperator_* | wc -l)" = "$n" ] || fail "dist/ holds $(ls dist/kubectl-myoperator_* | wc -l) plugin archives, want the $n of PLUGIN_PLATFORMS"
say "kubectl plugin: $n archives ($PLUGIN_PLATFORMS), each with the LICENSE and its platform's binary, in SHA256SUMS and krew/myoperator.yaml"
# krew installs it from the manifest and the host's archive with no network
# at all (a network namespace of its own, without even loopback), and
# kubectl then runs it: version, and status, which reaches for the cluster
# it is given (none answers here) as kubectl would.
host=$(go env GOOS)_$(go env GOARCH)
krew_root=$work/krew
unshare --net env KREW_ROOT="$krew_root" KREW_NO_UPGRADE_CHECK=1 "$KREW" install --manifest=dist/krew/myoperator.yaml --archive="dist/kubectl-myoperator_$host.tar.gz" >"$work/krew.log" 2>&1 ||
  { cat "$work/krew.log"; fail "krew install of dist/krew/myoperator.yaml from its archive, offline, failed (above)"; }
out=$(PATH="$krew_root/bin:$PATH" kubectl myoperator version 2>&1) || fail "kubectl myoperator version, installed by krew: $out"
grep -q "^myoperator $version " <<<"$out" || fail "kubectl myoperator version, installed by krew, printed $out; want $version"
out=$(PATH="$krew_root/bin:$PATH" kubectl myoperator status --server=https://127.0.0.1:1 --insecure-skip-tls-verify --token=none --request-timeout=5s 2>&1) &&
  fail "kubectl myoperator status against nothing succeeded: $out"
grep -q "127.0.0.1:1" <<<"$out" || fail "kubectl myoperator status, installed by krew, did not try the server it was given: $out"
# kubectl completes "kubectl myoperator <TAB>" through the archive's
# kubectl_complete-myoperator, which asks the plugin krew installed.
out=$(PATH="$krew_root/bin:$work/${host/_/-}:$PATH" kubectl __complete myoperator convert --to "" 2>/dev/null) || fail "kubectl __complete myoperator: $out"
[ "$(grep -x 'v1alpha1\|v1beta1\|v1' <<<"$out" | tr '\n' ' ')" = "v1alpha1 v1beta1 v1 " ] || fail "kubectl completing kubectl myoperator convert --to: $(tr '\n' ' ' <<<"$out")"
say "krew install (offline) from krew/myoperator.yaml and kubectl-myoperator_$host.tar.gz: kubectl myoperator version prints $version; status tries its --server; kubectl completes convert --to with v1alpha1 v1beta1 v1"
rm -rf "$work"

# The per-platform images make dist left in podman's store, and what the
# test starts below, go at the end.
registry=
pulled=()
cleanup() {
  [ -z "$registry" ] || kill "$registry" 2>/dev/null || true
  for ref in "${pulled[@]}"; do "${podman[@]}" rmi -f "$ref" >/dev/null 2>&1 || true; done
  for platform in $PLATFORMS; do
    "${podman[@]}" rmi "ghcr.io/example/myoperator:$version-${platform#*/}" >/dev/null 2>&1 || true
    [ -z "${gb_tag:-}" ] || "${podman[@]}" rmi "ghcr.io/example/myoperator-guestbook:$gb_tag-${platform#*/}" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
# The release's manager image checked as make test-image checks a
# multi-arch build (hack/test-image.sh): its manifest list, each
# platform's binaries and user, the host's binaries running read-only.
# make ci checks these images, not a second build of its own: the second
# one cost about 60 CPU seconds and its place in the chain before the
# install features.
IMG=ghcr.io/example/myoperator:$version ARCHIVE=dist/myoperator_$version.oci.tar PLATFORMS="$PLATFORMS" VERSION=$version KEEP_IMAGES=1 \
  hack/test-image.sh || fail "the release's manager image (above)"
# For make test-e2e-install-ways, before the push below rewrites dist/.
hack/dist-snapshot.sh save "$version"

# index_digest ARCHIVE: the digest of the image index in an OCI archive.
index_digest() { tar -xOf "$1" index.json | python3 -c 'import json, sys; print(json.load(sys.stdin)["manifests"][0]["digest"])'; }
mgr=$(index_digest "dist/myoperator_$version.oci.tar")
gb_archive=$(ls dist/myoperator-guestbook_*.oci.tar)
gb_tag=${gb_archive#dist/myoperator-guestbook_}
gb_tag=${gb_tag%.oci.tar}
gb=$(index_digest "$gb_archive")
grep -q "image: ghcr.io/example/myoperator@$mgr\$" dist/install.yaml || fail "install.yaml does not name the manager by $mgr"
# gb_env FILE: the value of the manager's GUESTBOOK_IMAGE in FILE.
gb_env() { grep -A1 -- "- name: GUESTBOOK_IMAGE" "$1" | sed -n 's/^ *value: //p'; }
[ "$(gb_env dist/install.yaml)" = "ghcr.io/example/myoperator-guestbook:$gb_tag@$gb" ] || fail "the manager's GUESTBOOK_IMAGE is not the archive's $gb: $(gb_env dist/install.yaml)"
grep -aq "ghcr.io/example/myoperator-guestbook:$gb_tag@$gb" "bin/release/linux_$(go env GOARCH)/manager" || fail "the manager binary does not carry the Guestbook image $gb"
say "install.yaml: manager @$mgr; GUESTBOOK_IMAGE :$gb_tag@$gb, also in the manager binary"

# check_packages REPO: the chart's values and the bundle's CSV name the
# manager as REPO/myoperator by digest, and the chart's GUESTBOOK_IMAGE the
# Guestbook's default by digest.
chart=dist/myoperator-${version#v}.tgz
check_packages() {
  local values csv
  values=$(tar -xzOf "$chart" myoperator/values.yaml)
  grep -q "^  repository: $1/myoperator\$" <<<"$values" && grep -q "^  digest: \"$mgr\"\$" <<<"$values" ||
    fail "$chart: values.yaml does not name $1/myoperator@$mgr"
  # The Deployment's two containers, and the test hook's pod (helm test
  # runs the plugin from the manager's image).
  [ "$(HELM_CACHE_HOME=bin/.helm HELM_CONFIG_HOME=bin/.helm HELM_DATA_HOME=bin/.helm "$HELM" template myoperator "$chart" --skip-tests | grep -c "image: $1/myoperator@$mgr\$")" = 2 ] ||
    fail "helm template $chart does not name $1/myoperator@$mgr in both containers"
  [ "$(HELM_CACHE_HOME=bin/.helm HELM_CONFIG_HOME=bin/.helm HELM_DATA_HOME=bin/.helm "$HELM" template myoperator "$chart" --show-only templates/tests/pod-myoperator-helm-test.yaml | grep -c "image: $1/myoperator@$mgr\$")" = 1 ] ||
    fail "helm template $chart: the test pod does not run $1/myoperator@$mgr"
  HELM_CACHE_HOME=bin/.helm HELM_CONFIG_HOME=bin/.helm HELM_DATA_HOME=bin/.helm "$HELM" template myoperator "$chart" --skip-tests >bin/test-dist-chart.yaml
  [ "$(gb_env bin/test-dist-chart.yaml)" = "$1/myoperator-guestbook:$gb_tag@$gb" ] ||
    fail "$chart: the manager's GUESTBOOK_IMAGE is not $1/myoperator-guestbook:$gb_tag@$gb"
  csv=$(tar -xzOf "dist/myoperator-bundle_$version.tar.gz" manifests/myoperator.clusterserviceversion.yaml)
  grep -q "image: $1/myoperator@$mgr\$" <<<"$csv" || fail "the bundle's CSV does not name $1/myoperator@$mgr"
  say "chart and bundle name $1/myoperator@$mgr"
}
check_packages ghcr.io/example
# The bundle is the tree's: its CSV is this version, replacing the newest
# release (a development tree's bundle is generated; a release's frozen).
csv=$(tar -xzOf "dist/myoperator-bundle_$version.tar.gz" manifests/myoperator.clusterserviceversion.yaml)
grep -q "^  version: ${version#v}\$" <<<"$csv" || fail "the bundle's CSV is not version ${version#v}: $(grep '^  version:' <<<"$csv")"
if [ "$version" != "$newest" ]; then
  grep -q "^  replaces: myoperator.$newest\$" <<<"$csv" || fail "the bundle's CSV of $version does not replace the newest release $newest: $(grep '^  replaces:' <<<"$csv")"
fi
say "bundle: CSV version ${version#v}$([ "$version" = "$newest" ] || echo ", replacing myoperator.$newest")"

# The bundle image: bundle.Dockerfile's every label in its config, and in
# its layers exactly the files of the bundle tarball, byte for byte.
bundle_archive=dist/myoperator-bundle_$version.oci.tar
[ -f "$bundle_archive" ] || fail "no $bundle_archive"
python3 - "$bundle_archive" "dist/myoperator-bundle_$version.tar.gz" bundle.Dockerfile <<'PY' || fail "$bundle_archive does not hold the bundle (above)"
import hashlib, io, json, sys, tarfile
archive, tarball, dockerfile = sys.argv[1:]
oci = tarfile.open(archive)
def blob(digest):
    return oci.extractfile("blobs/sha256/" + digest.split(":", 1)[1]).read()
index = json.loads(oci.extractfile("index.json").read())
top = json.loads(blob(index["manifests"][0]["digest"]))
image = json.loads(blob(top["manifests"][0]["digest"])) if "manifests" in top else top
labels = json.loads(blob(image["config"]["digest"]))["config"].get("Labels") or {}
want = dict(l[len("LABEL "):].strip().split("=", 1) for l in open(dockerfile) if l.startswith("LABEL "))
bad = [f"label {k}={labels.get(k)!r}, want {v!r}" for k, v in sorted(want.items()) if labels.get(k) != v]
def files(t):
    return {m.name.lstrip("./"): hashlib.sha256(t.extractfile(m).read()).hexdigest() for m in t.getmembers() if m.isfile()}
got = {}
for layer in image["layers"]:
    got.update(files(tarfile.open(fileobj=io.BytesIO(blob(layer["digest"])))))
bundle = files(tarfile.open(tarball))
bad += [f"{f}: in the image {got.get(f, 'missing')}, in the tarball {bundle.get(f, 'missing')}" for f in sorted(set(got) | set(bundle)) if got.get(f) != bundle.get(f)]
if not bundle or bad:
    print("\n".join(bad or ["the bundle tarball is empty"]), file=sys.stderr)
    sys.exit(1)
print(f"test-dist: bundle image: {len(want)} labels of bundle.Dockerfile, the tarball's {len(bundle)} files")
PY
bundle_digest=$(index_digest "$bundle_archive")

# A registry on loopback, and the release pushed to it.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
go -C hack/tools/registry build -o "$root/bin/registry" .
"$root/bin/registry" serve -addr "127.0.0.1:$port" >"$root/bin/test-dist-registry.log" 2>&1 &
registry=$!
for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$port/v2/" >/dev/null 2>&1 && break; sleep 0.1; done
to=127.0.0.1:$port/release
make --no-print-directory release-push REGISTRY="$to" REGISTRY_INSECURE=1 | grep '^registry:' || fail "make release-push failed"
grep -q "image: $to/myoperator@$mgr\$" dist/install.yaml || fail "install.yaml does not name $to/myoperator@$mgr after the push"
[ "$(gb_env dist/install.yaml)" = "$to/myoperator-guestbook:$gb_tag@$gb" ] || fail "the manager's GUESTBOOK_IMAGE does not name the registry after the push"
(cd dist && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not hold after the push"
check_packages "$to"

# A real client pulls each image by digest, for every platform.
for ref in "$to/myoperator@$mgr" "$to/myoperator-guestbook@$gb"; do
  for platform in $PLATFORMS; do
    "${podman[@]}" pull -q --tls-verify=false --platform "$platform" "$ref" >/dev/null || fail "podman pull $ref ($platform)"
    pulled+=("$ref")
    got=$("${podman[@]}" image inspect "$ref" --format '{{.Os}}/{{.Architecture}}')
    [ "$got" = "$platform" ] || fail "$ref pulled for $platform is $got"
    "${podman[@]}" rmi -f "$ref" >/dev/null
  done
  say "podman pulled $ref for $PLATFORMS"
done
ref=$to/myoperator-bundle@$bundle_digest
"${podman[@]}" pull -q --tls-verify=false "$ref" >/dev/null || fail "podman pull $ref"
pulled+=("$ref")
[ "$("${podman[@]}" image inspect "$ref" --format '{{index .Labels "operators.operatorframework.io.bundle.package.v1"}}')" = myoperator ] ||
  fail "$ref pulled has not the bundle's package label"
"${podman[@]}" rmi -f "$ref" >/dev/null
say "podman pulled the bundle image $ref"
say "all checks passed"
