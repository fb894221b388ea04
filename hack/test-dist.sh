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
# - the manager's image passes make test-image's checks (hack/test-image.sh);
# - every file of SHA256SUMS verifies with cosign against its signature
#   and is a subject of the signed SLSA provenance, which names HEAD, the
#   builder and each image by digest; one changed byte of an archive fails
#   both; after make release-push, every image (index and platforms)
#   verifies in the registry with its provenance, and each binary's SBOM
#   with its platform's image, and an image pushed without signing fails.
# Everything it starts listens on loopback and is stopped at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail() { echo "test-dist: $*" >&2; exit 1; }
say() { echo "test-dist: $*"; }
podman=(podman --cgroup-manager=cgroupfs --runtime /usr/sbin/runc)
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64}
HELM=${HELM:?set HELM to the helm binary (make test-dist builds it)}
COSIGN=${COSIGN:?set COSIGN to the cosign binary (make test-dist builds it)}

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

# verify_files: every file of SHA256SUMS verifies against its signature
# and is a subject of the signed provenance, as a user checks them
# (docs/install.md), with the public key alone.
pub=dist/signatures/cosign.pub
verify_files() {
  local n=0 file
  while read -r _ file; do
    "$COSIGN" verify-blob --key "$pub" --insecure-ignore-tlog --bundle "dist/signatures/$file.sigstore.json" "dist/$file" >/dev/null 2>"$root/bin/test-dist-cosign.log" ||
      { cat "$root/bin/test-dist-cosign.log"; fail "cosign verify-blob dist/$file failed (above)"; }
    "$COSIGN" verify-blob-attestation --key "$pub" --insecure-ignore-tlog --bundle dist/signatures/provenance.sigstore.json --type slsaprovenance1 "dist/$file" >/dev/null 2>"$root/bin/test-dist-cosign.log" ||
      { cat "$root/bin/test-dist-cosign.log"; fail "cosign verify-blob-attestation: dist/$file is not in the signed provenance (above)"; }
    n=$((n + 1))
  done <dist/SHA256SUMS
  # The statement names the commit, the builder, and each image by the
  # digest of its archive's index, under the repository given.
  python3 - "$1" "$(git rev-parse HEAD)" <<'PY' || fail "dist/signatures/provenance.intoto.json (above)"
import glob, hashlib, json, os, sys, tarfile
repo, commit = sys.argv[1:]
st = json.load(open("dist/signatures/provenance.intoto.json"))
pred = st["predicate"]
bad = []
if st["predicateType"] != "https://slsa.dev/provenance/v1":
    bad.append(f"predicateType {st['predicateType']}")
deps = pred["buildDefinition"]["resolvedDependencies"]
if [d["digest"].get("gitCommit") for d in deps] != [commit]:
    bad.append(f"resolvedDependencies {deps}, want the commit {commit}")
if not pred["runDetails"]["builder"].get("id"):
    bad.append("no builder id")
subjects = {s["name"]: s["digest"]["sha256"] for s in st["subject"]}
for line in open("dist/SHA256SUMS"):
    total, name = line.split()
    if subjects.get(name) != total:
        bad.append(f"{name}: sha256 {subjects.get(name)} in the statement, {total} in SHA256SUMS")
for archive in glob.glob("dist/*.oci.tar"):
    base = os.path.basename(archive)[: -len(".oci.tar")]
    name, tag = base.rsplit("_", 1)
    digest = json.loads(tarfile.open(archive).extractfile("index.json").read())["manifests"][0]["digest"]
    if subjects.get(f"{repo}/{name}:{tag}") != digest.split(":", 1)[1]:
        bad.append(f"image {repo}/{name}:{tag}: {subjects.get(f'{repo}/{name}:{tag}')} in the statement, {digest} in {archive}")
if bad:
    print("\n".join(bad), file=sys.stderr)
    sys.exit(1)
PY
  say "cosign verified the $n files of SHA256SUMS against dist/signatures/ and their provenance (commit $(git rev-parse --short HEAD), images under $1)"
}
verify_files ghcr.io/example
# One changed byte of an archive: its signature and the provenance refuse it.
tampered=$(mktemp -d "$root/bin/test-dist-tampered.XXXXXX")
host_archive=kubectl-myoperator_$(go env GOOS)_$(go env GOARCH).tar.gz
cp "dist/$host_archive" "$tampered/"
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[100] ^= 1; open(sys.argv[1], "wb").write(b)' "$tampered/$host_archive"
out=$("$COSIGN" verify-blob --key "$pub" --insecure-ignore-tlog --bundle "dist/signatures/$host_archive.sigstore.json" "$tampered/$host_archive" 2>&1) &&
  fail "cosign verify-blob accepted $host_archive with byte 100 changed: $out"
grep -q "invalid signature" <<<"$out" || fail "cosign verify-blob refused the changed $host_archive, but not for its signature: $out"
say "one byte changed in $host_archive: cosign verify-blob: $(grep -m1 -o 'Error: .*' <<<"$out")"
out=$("$COSIGN" verify-blob-attestation --key "$pub" --insecure-ignore-tlog --bundle dist/signatures/provenance.sigstore.json --type slsaprovenance1 "$tampered/$host_archive" 2>&1) &&
  fail "cosign verify-blob-attestation found $host_archive with byte 100 changed in the provenance: $out"
grep -q "do not match digests in statement" <<<"$out" || fail "cosign verify-blob-attestation refused the changed $host_archive, but not for its digest: $out"
say "one byte changed in $host_archive: cosign verify-blob-attestation: $(grep -m1 -o 'Error: .*' <<<"$out")"
rm -rf "$tampered"
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
index_digest() { hack/ociarchive.py digest "$1"; }
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
make --no-print-directory release-push REGISTRY="$to" REGISTRY_INSECURE=1 | grep '^registry:\|^sign:' || fail "make release-push failed"
grep -q "image: $to/myoperator@$mgr\$" dist/install.yaml || fail "install.yaml does not name $to/myoperator@$mgr after the push"
[ "$(gb_env dist/install.yaml)" = "$to/myoperator-guestbook:$gb_tag@$gb" ] || fail "the manager's GUESTBOOK_IMAGE does not name the registry after the push"
(cd dist && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not hold after the push"
check_packages "$to"
# The files make release-push rewrote are signed again, under the registry.
verify_files "$to"

# payloads FILE: the in-toto statements of cosign verify-attestation's
# output, one JSON per line.
payloads() { python3 -c 'import base64, json, sys; [print(base64.b64decode(json.loads(l)["payload"]).decode()) for l in open(sys.argv[1]) if l.strip()]' "$1"; }
# Every image in the registry verifies: its index and each platform's
# image signed, the provenance on the index naming HEAD, and on each
# platform's image the SBOM of each binary it holds, as make dist wrote it.
reg=(--allow-http-registry --allow-insecure-registry)
for archive in dist/*.oci.tar; do
  base=$(basename "$archive" .oci.tar)
  name=${base%_*}
  ref=$to/$name@$(index_digest "$archive")
  "$COSIGN" verify --key "$pub" --insecure-ignore-tlog "${reg[@]}" "$ref" >/dev/null 2>bin/test-dist-cosign.log ||
    { cat bin/test-dist-cosign.log; fail "cosign verify $ref (above)"; }
  "$COSIGN" verify-attestation --key "$pub" --insecure-ignore-tlog "${reg[@]}" --type slsaprovenance1 "$ref" >bin/test-dist-attestation.json 2>bin/test-dist-cosign.log ||
    { cat bin/test-dist-cosign.log; fail "cosign verify-attestation --type slsaprovenance1 $ref (above)"; }
  payloads bin/test-dist-attestation.json | grep -q "\"gitCommit\":\"$(git rev-parse HEAD)\"" || fail "$ref: its provenance does not name HEAD: $(payloads bin/test-dist-attestation.json | head -c 600)"
  sboms=0 platforms=0
  while read -r arch digest files; do
    "$COSIGN" verify --key "$pub" --insecure-ignore-tlog "${reg[@]}" "$to/$name@$digest" >/dev/null 2>bin/test-dist-cosign.log ||
      { cat bin/test-dist-cosign.log; fail "cosign verify $to/$name@$digest ($arch) (above)"; }
    platforms=$((platforms + 1))
    want=
    for sbom in dist/sbom/*_linux_"$arch".cdx.json; do
      bin=$(basename "$sbom" "_linux_$arch.cdx.json")
      [[ ",$files," == *",$bin,"* ]] && want+="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["serialNumber"])' "$sbom") "
    done
    [ -n "$want" ] || continue
    "$COSIGN" verify-attestation --key "$pub" --insecure-ignore-tlog "${reg[@]}" --type cyclonedx "$to/$name@$digest" >bin/test-dist-attestation.json 2>bin/test-dist-cosign.log ||
      { cat bin/test-dist-cosign.log; fail "cosign verify-attestation --type cyclonedx $to/$name@$digest ($arch) (above)"; }
    got=$(payloads bin/test-dist-attestation.json | python3 -c 'import json, sys; print(" ".join(sorted({json.loads(l)["predicate"]["serialNumber"] for l in sys.stdin if l.strip()})))')
    # (make release-push run again attaches them again: the same ones)
    [ "$got" = "$(tr ' ' '\n' <<<"$want" | grep . | sort -u | tr '\n' ' ' | sed 's/ $//')" ] || fail "$to/$name@$digest ($arch): SBOMs $got attached, want those of dist/sbom/ for $files: $want"
    sboms=$((sboms + $(wc -w <<<"$want")))
  done < <(hack/ociarchive.py platforms "$archive")
  say "cosign verified $ref: signed, as are its $platforms platform images; its provenance names HEAD; $sboms SBOMs attached"
done
# An image pushed without signing, even by a digest the release signed
# elsewhere, does not verify: the Guestbook's archive pushed as
# $to/myoperator:unsigned.
unsigned=$(mktemp -d "$root/bin/test-dist-unsigned.XXXXXX")
cp "$gb_archive" "$unsigned/myoperator_unsigned.oci.tar"
"$root/bin/registry" push -to "$to" -insecure -from ghcr.io/example "$unsigned" >/dev/null || fail "pushing an unsigned image to $to/myoperator:unsigned"
out=$("$COSIGN" verify --key "$pub" --insecure-ignore-tlog "${reg[@]}" "$to/myoperator:unsigned" 2>&1) && fail "cosign verified $to/myoperator:unsigned, pushed unsigned: $out"
grep -q "no signatures found" <<<"$out" || fail "cosign verify refused $to/myoperator:unsigned, but not for having no signature: $out"
say "an image pushed unsigned ($to/myoperator:unsigned): cosign verify: $(grep -m1 -o 'Error: .*' <<<"$out")"
rm -rf "$unsigned"

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
