#!/usr/bin/env bash
# Renders a kustomization under config/ (config/default unless $2 names
# another, for example an overlay with config/certmanager) with the manager image set to $1,
# through a throw-away overlay (kubectl's kustomize has no `edit set
# image`). make deploy pipes it into kubectl apply.
#
# Usage: hack/render-default.sh IMAGE [config/DIR]
set -euo pipefail
img=${1:?usage: render-default.sh IMAGE [config/DIR]}
base=${2:-config/default}
root=$(cd "$(dirname "$0")/.." && pwd)
case $base in
  config/*) [ -f "$root/$base/kustomization.yaml" ] || { echo "render-default.sh: $base has no kustomization.yaml" >&2; exit 1; } ;;
  *) echo "render-default.sh: $base: want a kustomization under config/ (for example config/default)" >&2; exit 1 ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
name=${img%:*}; tag=${img##*:}
if [ "$name" = "$img" ] || [[ "$tag" == */* ]]; then name=$img; tag=latest; fi
ln -s "$root/config" "$dir/config"
cat > "$dir/kustomization.yaml" <<YAML
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- $base
images:
- name: ghcr.io/example/myoperator
  newName: $name
  newTag: "$tag"
YAML
kubectl kustomize "$dir"
