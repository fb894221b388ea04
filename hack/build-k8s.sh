#!/usr/bin/env bash
# Builds the pinned Kubernetes test binaries from Go modules, offline from any
# release download site, into a versioned folder. Only missing binaries are
# built, so a warm machine pays nothing; a cold one takes ~15-20 minutes.
#
# Usage: hack/build-k8s.sh <out-dir>   (for example bin/k8s/v1.37.2)
#
# KUBE_VERSION picks the modules below. The default version gets the whole
# control plane and kwok (tests, dev cluster, e2e); the other supported ones
# (1.33 to 1.36) only what envtest starts, etcd and kube-apiserver (make
# test-k8s-oldest, make test-k8s-matrix).
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
# The toolchain the Makefile pins (GOTOOLCHAIN) and its flags (GOFLAGS),
# as every other build here: the default version's module requires the
# operator's library versions (hack/k8s/kube/go.mod says why), so the
# standard library and about 890 packages are compiled once for both
# builds on a fresh machine, 370 CPU seconds less than with the machine's
# own Go. The price: a warm machine's first make ci after the pin or those
# libraries moved compiles these binaries again (7 to 18 minutes), where
# the machine's own Go kept them. Run alone (no make), the Go the module
# asks for, or the machine's.
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto}
out=${1:?usage: build-k8s.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean"

start=$(date +%s)
step() { printf '[build-k8s %4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }
fail() { printf '[build-k8s] FAILED: %s\n' "$*" >&2; exit 1; }

# build NAME DIR PKG [LDFLAGS]: go build PKG in module DIR into $out/NAME.
build() {
  local name=$1 dir=$2 pkg=$3 flags=${4:-"-s -w"}
  if [ -x "$out/$name" ]; then step "$name: present"; return; fi
  step "$name: building (module $dir)..."
  ( cd "$root/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "$flags" -o "$out/$name.tmp" "$pkg" ) \
    || fail "$name did not build; see the go output above (a cold build needs the Go module proxy)"
  mv "$out/$name.tmp" "$out/$name"
  step "$name: done"
}

# Each version is pinned by its own modules, with the etcd its release names
# (build/dependencies.yaml), so that adding one never moves the others'
# dependencies. v1.33.13 is the oldest supported: 1.30 to 1.32 fail the
# envtest suites (docs/install.md: "Supported Kubernetes versions"). Each
# minor between is pinned to the newest patch the Go module proxy serves.
# v1.34.12, v1.35.8 and v1.36.5 name etcd 3.6.5, 3.6.6 and 3.6.8: they reuse
# hack/k8s/etcd, a newer patch (3.6.16) of the same etcd minor, rather than
# a module per etcd patch.
case "$KUBE_VERSION" in
  v1.37.2) kube_mod=hack/k8s/kube etcd_mod=hack/k8s/etcd full=true ;;
  v1.36.5) kube_mod=hack/k8s/kube-v1.36 etcd_mod=hack/k8s/etcd full=false ;;
  v1.35.8) kube_mod=hack/k8s/kube-v1.35 etcd_mod=hack/k8s/etcd full=false ;;
  v1.34.12) kube_mod=hack/k8s/kube-v1.34 etcd_mod=hack/k8s/etcd full=false ;;
  v1.33.13) kube_mod=hack/k8s/kube-v1.33 etcd_mod=hack/k8s/etcd-v3.5 full=false ;;
  *) fail "no module under hack/k8s pins KUBE_VERSION=$KUBE_VERSION (known: v1.37.2, v1.36.5, v1.35.8, v1.34.12, v1.33.13)" ;;
esac

mkdir -p "$out"
out=$(cd "$out" && pwd)

# The control plane's binaries and kwok come from one module (kwok and
# kwokctl are tool directives of hack/k8s/kube, at the Kubernetes
# libraries it pins): one go build of the missing ones compiles their
# shared packages once and links them side by side, where one build after
# another left a core idle through each link. Built with go install of its
# own module, kwok compiled its own copy of client-go, the API server
# libraries and the APIs (Kubernetes 0.36), about as long as etcd on a
# fresh machine. etcd, a module of its own, builds at the same time, in
# the background; each failure is reported by name.
declare -A pkg_of=([kube-apiserver]=./cmd/kube-apiserver [kube-controller-manager]=./cmd/kube-controller-manager
  [kube-scheduler]=./cmd/kube-scheduler [kwok]=sigs.k8s.io/kwok/cmd/kwok [kwokctl]=sigs.k8s.io/kwok/cmd/kwokctl)
kube_cmds=kube-apiserver
[ "$full" = true ] && kube_cmds="kube-apiserver kube-controller-manager kube-scheduler kwok kwokctl"
missing=()
for name in $kube_cmds; do
  if [ -x "$out/$name" ]; then step "$name: present"; else missing+=("$name"); fi
done

pids=()
( build etcd "$etcd_mod" . ) & pids+=($!)
if [ ${#missing[@]} -gt 0 ]; then
  step "${missing[*]}: building (module $kube_mod)..."
  tmp="$out/.kube.tmp"
  rm -rf "$tmp" && mkdir -p "$tmp"
  pkgs=()
  for name in "${missing[@]}"; do pkgs+=("${pkg_of[$name]}"); done
  ( cd "$root/$kube_mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}" ) \
    || fail "${missing[*]} did not build; see the go output above (a cold build needs the Go module proxy)"
  for name in "${missing[@]}"; do mv "$tmp/$name" "$out/$name"; done
  rm -rf "$tmp"
  step "${missing[*]}: done"
fi
for pid in "${pids[@]}"; do wait "$pid" || fail "see above"; done

"$out/kube-apiserver" --version >/dev/null || fail "kube-apiserver does not run"
step "all binaries ready in $out ($("$out/kube-apiserver" --version))"
