#!/usr/bin/env bash
# Builds what a real Kubernetes node needs from Go modules, offline
# from any release download site, into a versioned folder, the same way
# hack/build-k8s.sh builds the control plane: only missing pieces are built,
# static (CGO_ENABLED=0), -trimpath, with version stamps.
#
#   kubelet, kube-proxy          k8s.io/kubernetes (module hack/k8s/kube)
#   containerd, ctr,             github.com/containerd/containerd/v2
#   containerd-shim-runc-v2      (module hack/node/containerd; CRI built in)
#   cni/{bridge,host-local,      github.com/containernetworking/plugins
#        loopback,portmap}       (module hack/node/cni)
#   pause.tar, hello.tar         hack/node/pause (the sandbox image) and
#                                guestbookserver/ (the smoke's HTTP workload),
#                                OCI archives of FROM scratch images built by
#                                podman
#
# runc and iptables come from Debian's packages (checked, not built).
#
# Usage: hack/build-node.sh <out-dir>   (for example bin/node/v1.37.2)
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
CONTAINERD_VERSION=v2.4.2 # pinned by hack/node/containerd/go.mod
CNI_VERSION=v1.10.0       # pinned by hack/node/cni/go.mod
PAUSE_IMAGE=${PAUSE_IMAGE:-localhost/myoperator/pause:1}
out=${1:?usage: build-node.sh OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)

case "$KUBE_VERSION" in
  v1.37.2) kube_mod=hack/k8s/kube ;;
  *) echo "build-node: only KUBE_VERSION=v1.37.2 has a node build" >&2; exit 1 ;;
esac
minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean"
ctrd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION} -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2"
cni_ldflags="-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=${CNI_VERSION}"

start=$(date +%s)
step() { printf '[build-node %4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }
fail() { printf '[build-node] FAILED: %s\n' "$*" >&2; exit 1; }

# build NAME DIR PKG LDFLAGS [TAGS]: go build PKG in module DIR into $out/NAME.
build() {
  local name=$1 dir=$2 pkg=$3 flags=$4 tags=${5:-}
  if [ -x "$out/$name" ]; then step "$name: present"; return; fi
  step "$name: building $pkg (module $dir)..."
  local t0; t0=$(date +%s)
  ( cd "$root/$dir" && CGO_ENABLED=0 go build -trimpath ${tags:+-tags "$tags"} -ldflags "$flags" -o "$out/$name.tmp" "$pkg" ) \
    || fail "$name did not build; see the go output above (a cold build needs the Go module proxy)"
  mv "$out/$name.tmp" "$out/$name"
  step "$name: done in $(( $(date +%s) - t0 ))s"
}

mkdir -p "$out/cni"
out=$(cd "$out" && pwd)

build kubelet "$kube_mod" k8s.io/kubernetes/cmd/kubelet "$kube_ldflags"
build kube-proxy "$kube_mod" k8s.io/kubernetes/cmd/kube-proxy "$kube_ldflags"

# With cgo off the btrfs snapshotter drops out by its own build tag; the CRI
# plugin is in by default (its tag is no_cri). The other snapshotters that
# need kernel or host tools (devmapper, zfs) are left out: the node uses
# overlayfs.
ctrd_tags="no_devmapper,no_zfs"
build containerd hack/node/containerd github.com/containerd/containerd/v2/cmd/containerd "$ctrd_ldflags" "$ctrd_tags"
build containerd-shim-runc-v2 hack/node/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$ctrd_ldflags"
build ctr hack/node/containerd github.com/containerd/containerd/v2/cmd/ctr "$ctrd_ldflags"

for p in main/bridge ipam/host-local main/loopback meta/portmap; do
  build "cni/${p#*/}" hack/node/cni "github.com/containernetworking/plugins/plugins/$p" "$cni_ldflags"
done

# The images: each a static binary in a FROM scratch image, saved as an OCI
# archive that `ctr -n k8s.io images import` takes. podman only copies a file
# (no RUN), so no container runtime is involved and nothing is pulled.
#   pause  the pods' sandbox (containerd's pinned sandbox image)
#   hello  node.sh smoke's workload: the Guestbook server (guestbookserver/,
#          the project's own module), an HTTP server with a readiness endpoint
# image NAME REF MODULE-DIR PKG: PKG built into $out/NAME, then a FROM scratch
# image of it: MODULE-DIR's Containerfile, or else the binary alone as uid
# 65532.
image() {
  local name=$1 ref=$2 dir=$3 pkg=$4
  build "$name" "$dir" "$pkg" "-s -w"
  if [ -s "$out/$name.tar" ]; then step "$name.tar: present"; return; fi
  command -v podman >/dev/null || fail "podman is missing (hack/ensure-podman.sh installs it)"
  step "$name.tar: podman build $ref..."
  local ctx; ctx=$(mktemp -d)
  cp "$out/$name" "$ctx/"
  if [ -f "$root/$dir/Containerfile" ]; then cp "$root/$dir/Containerfile" "$ctx/"
  else printf 'FROM scratch\nCOPY %s /%s\nUSER 65532:65532\nENTRYPOINT ["/%s"]\n' "$name" "$name" "$name" >"$ctx/Containerfile"; fi
  podman build -q -f "$ctx/Containerfile" -t "$ref" "$ctx" >/dev/null || { rm -rf "$ctx"; fail "podman build of $ref"; }
  rm -rf "$ctx"
  rm -f "$out/$name.tar.tmp"
  podman save --format oci-archive -o "$out/$name.tar.tmp" "$ref" || fail "podman save of $ref"
  mv "$out/$name.tar.tmp" "$out/$name.tar"
  echo "$ref" > "$out/$name.image"
  step "$name.tar: done ($(du -k "$out/$name.tar" | cut -f1) KiB, $ref)"
}
image pause "$PAUSE_IMAGE" hack/node/pause .
image hello "${HELLO_IMAGE:-localhost/myoperator/hello:2}" . ./guestbookserver

for tool in runc iptables; do
  command -v "$tool" >/dev/null || fail "$tool is missing: apt-get install -y $tool (Debian's package; not built here)"
done
step "all node binaries ready in $out ($("$out/kubelet" --version), containerd $("$out/containerd" --version | awk '{print $3}'), $(runc --version | head -1))"
