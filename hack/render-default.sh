#!/usr/bin/env bash
# Renders config/default with the manager image set to $1, through a
# throw-away overlay (kubectl's kustomize has no `edit set image`).
set -euo pipefail
img=${1:?usage: render-default.sh IMAGE}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
name=${img%:*}; tag=${img##*:}
if [ "$name" = "$img" ] || [[ "$tag" == */* ]]; then name=$img; tag=latest; fi
ln -s "$root/config" "$dir/config"
cat > "$dir/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- config/default
images:
- name: ghcr.io/example/myoperator
  newName: $name
  newTag: "$tag"
YAML
kubectl kustomize "$dir"
