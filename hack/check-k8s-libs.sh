#!/usr/bin/env bash
# Fails when a module that both the operator's module (go.mod) and the test
# cluster's Kubernetes build (hack/k8s/kube/go.mod) require is at two
# versions. Built with the same toolchain and flags, the two share every
# compiled package whose dependencies are all at the same versions: about
# 890 of them, 300 CPU seconds of a fresh machine's make ci (the comment in
# hack/k8s/kube/go.mod says more). A version moved in one module alone
# loses that silently; this says which, and the command that aligns it.
#
# Left apart on purpose: github.com/google/cel-go, which the API server
# evaluates CRD rules with (the release's version stays), and the
# k8s.io/kubernetes staging modules, which the Kubernetes module replaces
# with v0.0.0 requirements.
set -euo pipefail
cd "$(dirname "$0")/.."

# requires GO_MOD: "path version" for each require line.
requires() {
  awk '/^require \($/ { inblock = 1; next }
       inblock && /^\)/ { inblock = 0; next }
       inblock && NF >= 2 && $1 !~ /^\/\// { print $1, $2; next }
       /^require [^(]/ { print $2, $3 }' "$1"
}

status=0
while read -r path main kube; do
  case $path in
    github.com/google/cel-go) continue ;;
  esac
  [ "$kube" = v0.0.0 ] && continue
  if [ "$main" != "$kube" ]; then
    echo "check-k8s-libs: $path is $main in go.mod and $kube in hack/k8s/kube/go.mod; align it: (cd hack/k8s/kube && go get $path@$main && go mod tidy)"
    status=1
  fi
done < <(join <(requires go.mod | sort) <(requires hack/k8s/kube/go.mod | sort))
exit $status
