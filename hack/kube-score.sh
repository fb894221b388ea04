#!/usr/bin/env bash
# Scores the rendered install with kube-score: config/default, and
# config/default with each of the optional components config/network-policy
# and config/namespace-scope. Fails on
# any CRITICAL finding. A check that does not fit is opted out on its
# object (a kube-score/ignore annotation, with the reason in a comment
# beside it), never here, so that the reason travels with the manifest.
#
# Usage: hack/kube-score.sh KUBE_SCORE_BINARY
set -euo pipefail
kube_score=${1:?usage: kube-score.sh KUBE_SCORE_BINARY}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

kubectl kustomize "$root/config/default" > "$dir/default.yaml"
# Each component added the way a user's overlay adds it.
components=(network-policy namespace-scope)
mkdir "$dir/overlay" && ln -s "$root/config" "$dir/overlay/config"
for c in "${components[@]}"; do
  cat > "$dir/overlay/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- config/default
components:
- config/$c
YAML
  kubectl kustomize "$dir/overlay" > "$dir/default+$c.yaml"
done

# Optional checks that the manifests meet and should keep meeting.
optional=(--enable-optional-test container-seccomp-profile --enable-optional-test container-ports-check)
failed=0
for render in default "${components[@]/#/default+}"; do
  rc=0
  "$kube_score" score --output-format ci --kubernetes-version v1.37 "${optional[@]}" "$dir/$render.yaml" > "$dir/$render.out" || rc=$?
  ok=$(grep -c '^\[OK\]' "$dir/$render.out" || true)
  skipped=$(grep -c '^\[SKIPPED\]' "$dir/$render.out" || true)
  critical=$(grep -c '^\[CRITICAL\]' "$dir/$render.out" || true)
  echo "kube-score: config/$render: $ok OK, $skipped skipped (optional or opted out), $critical critical"
  grep -v '^\[OK\]\|^\[SKIPPED\]' "$dir/$render.out" | sed 's/^/  /' || true
  if [ "$rc" -ne 0 ] || [ "$critical" -ne 0 ]; then failed=1; fi
done
if [ "$failed" -ne 0 ]; then
  echo "kube-score: CRITICAL findings above: fix them, or opt out on the object with a kube-score/ignore annotation and a comment saying why"
  exit 1
fi
echo "kube-score: no critical finding"
