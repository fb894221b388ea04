#!/usr/bin/env bash
# Signs a release's files, and its images once they are in a registry,
# with cosign, and records their provenance:
#
#   hack/sign.sh                       (make dist runs it last)
#   hack/sign.sh --registry HOST/PATH  (make release-push runs it after the push)
#
# Into dist/signatures/ (which SHA256SUMS does not list: it holds what
# proves the files, not files of the release):
#
#   cosign.pub                  the public key every signature verifies with
#   provenance.intoto.json      an in-toto statement of SLSA provenance v1
#                               (hack/provenance): every file SHA256SUMS
#                               lists and every image by its digest, the
#                               commit, the builder, the build's parameters
#   provenance.predicate.json   its predicate alone, which cosign attest
#                               attaches to each image (--registry)
#   provenance.sigstore.json    that statement signed (cosign attest-blob)
#   <file>.sigstore.json        each file's signature (cosign sign-blob)
#
# With --registry, each image pushed there (dist/<name>_<tag>.oci.tar as
# <registry>/<name>@<digest>) is signed, its index and every platform's
# image (cosign sign --recursive); the provenance is attached to the
# index and each binary's CycloneDX SBOM to its platform's image (cosign
# attest, types slsaprovenance1 and cyclonedx).
#
# The key: COSIGN_KEY, a file or any key reference cosign takes (a KMS URI
# such as awskms:///alias/myoperator-release, k8s://ns/secret), its
# password in COSIGN_PASSWORD. Without one, a key pair made for this
# checkout in bin/cosign-dev/ (no password), which proves that the files
# are those this machine wrote and nothing about who wrote them:
# docs/SECURITY.md says how a maintainer keeps the release key and signs
# with the public transparency log. Signing here never reaches a network
# service: hack/cosign-offline.json is a signing config with no
# transparency log, no timestamp authority and no certificate authority
# (cosign signing-config create, with no service), so a signature is
# verified with --insecure-ignore-tlog. hack/cosign-offline-root.json is
# the trusted root that goes with it, naming no service either (cosign
# trusted-root create, with no service): without a trusted root, cosign
# asks the public TUF repository for one before each signature, and where
# the network is cut off (make test's network namespace) it waits about
# 10 s per call on the DNS lookup before it goes on, which made make dist
# two minutes slower there. With the offline config, a call whose output
# says it reached for TUF anyway fails here, so the claim stays true.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { echo "sign: $*"; }
fail() { echo "sign: $*" >&2; exit 1; }
COSIGN=${COSIGN:?set COSIGN to the cosign binary (make dist builds it)}
registry= insecure=()
while [ $# -gt 0 ]; do
  case $1 in
  --registry) registry=${2:?--registry HOST/PATH}; shift 2 ;;
  --insecure) insecure=(--allow-http-registry --allow-insecure-registry); shift ;;
  *) fail "unknown argument $1" ;;
  esac
done
dist=$root/dist
[ -f "$dist/SHA256SUMS" ] || fail "no dist/SHA256SUMS: make dist first"
sigs=$dist/signatures
# COSIGN_SIGNING_CONFIG: another signing config, one naming the public
# transparency log where it is reachable (docs/SECURITY.md).
config=${COSIGN_SIGNING_CONFIG:-$root/hack/cosign-offline.json}
# COSIGN_TRUSTED_ROOT: the trusted root to go with it (with a public
# signing config and none given, cosign fetches the public one by TUF).
offline=false trusted=()
if [ -z "${COSIGN_SIGNING_CONFIG:-}" ]; then
  offline=true
  trusted=(--trusted-root "${COSIGN_TRUSTED_ROOT:-$root/hack/cosign-offline-root.json}")
elif [ -n "${COSIGN_TRUSTED_ROOT:-}" ]; then
  trusted=(--trusted-root "$COSIGN_TRUSTED_ROOT")
fi

key=${COSIGN_KEY:-}
if [ -z "$key" ]; then
  key=$root/bin/cosign-dev/cosign.key
  if [ ! -f "$key" ]; then
    mkdir -p "$root/bin/cosign-dev" && chmod 0700 "$root/bin/cosign-dev"
    COSIGN_PASSWORD= "$COSIGN" generate-key-pair --output-key-prefix "$root/bin/cosign-dev/cosign" >/dev/null 2>&1 ||
      fail "cosign generate-key-pair into bin/cosign-dev/ failed"
  fi
  export COSIGN_PASSWORD=
  say "no COSIGN_KEY: signing with this checkout's development key (bin/cosign-dev/cosign.key), not a release key"
fi
rm -rf "$sigs" && mkdir -p "$sigs"
"$COSIGN" public-key --key "$key" --outfile "$sigs/cosign.pub" >/dev/null 2>&1 || fail "cosign public-key --key $key failed"

# The provenance: every file and every image, named where they are.
# make dist passes its version and when it started; make release-push's
# provenance starts with the push.
version=${DIST_VERSION:-$(go run ./hack/version -dist)}
commit=$(git rev-parse HEAD)
builder=${BUILDER_ID:-https://github.com/example/myoperator/hack/dist.sh/$(id -un)@$(hostname)}
go run ./hack/provenance -dist "$dist" -repo "${registry:-ghcr.io/example}" -commit "$commit" -version "$version" -builder "$builder" \
  -param "platforms=${PLATFORMS:-linux/amd64 linux/arm64}" -param "pluginPlatforms=${PLUGIN_PLATFORMS:-}" \
  ${registry:+-param "registry=$registry"} ${DIST_STARTED:+-started "$DIST_STARTED"} \
  -statement "$sigs/provenance.intoto.json" -predicate "$sigs/provenance.predicate.json"

# sign ARGS...: cosign, signing with the key, its log kept when it fails
# (or, signing offline, when it reached for the TUF repository).
sign() {
  "$COSIGN" "$@" --key "$key" --signing-config "$config" "${trusted[@]}" --yes >"$root/bin/sign.log" 2>&1 ||
    { cat "$root/bin/sign.log" >&2; fail "cosign $1 failed (above)"; }
  if $offline && grep -q TUF "$root/bin/sign.log"; then
    cat "$root/bin/sign.log" >&2
    fail "cosign $1 reached for the TUF repository while signing offline (above): give it a trusted root (COSIGN_TRUSTED_ROOT)"
  fi
}
sign attest-blob --statement "$sigs/provenance.intoto.json" --bundle "$sigs/provenance.sigstore.json"
n=0
while read -r _ file; do
  mkdir -p "$(dirname "$sigs/$file")"
  sign sign-blob --bundle "$sigs/$file.sigstore.json" "$dist/$file"
  n=$((n + 1))
done <"$dist/SHA256SUMS"
chmod -R a+rX "$sigs"
say "signed the $n files of SHA256SUMS and their provenance (dist/signatures/, key cosign.pub)"
[ -n "$registry" ] || exit 0


# The images, as hack/tools/registry pushed them.
for archive in "$dist"/*.oci.tar; do
  base=$(basename "$archive" .oci.tar)
  name=${base%_*}
  ref=$registry/$name@$(hack/ociarchive.py digest "$archive")
  sign sign --recursive "${insecure[@]}" "$ref"
  sign attest --type slsaprovenance1 --predicate "$sigs/provenance.predicate.json" "${insecure[@]}" "$ref"
  # Each platform's image carries the SBOM of each binary in it.
  sboms=0
  while read -r arch digest files; do
    for sbom in "$dist"/sbom/*_linux_"$arch".cdx.json; do
      bin=$(basename "$sbom" "_linux_$arch.cdx.json")
      [[ ",$files," == *",$bin,"* ]] || continue
      sign attest --type cyclonedx --predicate "$sbom" "${insecure[@]}" "$registry/$name@$digest"
      sboms=$((sboms + 1))
    done
  done < <(hack/ociarchive.py platforms "$archive")
  say "signed $ref and its platforms' images; provenance attached; $sboms SBOMs attached to the platforms' images"
done
