#!/usr/bin/env bash
# make undeploy: removes the operator, config/operator unless $1 names
# another kustomization (a path relative to the repository, or absolute),
# and waits until it is gone. It refuses a kustomization that holds a
# CustomResourceDefinition: deleting a CRD deletes every object of its kind
# in the cluster, which only make uninstall does, after confirmation.
#
# Usage: [KUBECTL="kubectl --kubeconfig FILE"] hack/undeploy.sh [config/DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
read -r -a kc <<<"${KUBECTL:-kubectl}"
dir=${1:-config/operator}
path=$dir
[[ $path == /* ]] || path=$root/$dir
rendered=$(kubectl kustomize "$path")
if grep -qx 'kind: CustomResourceDefinition' <<<"$rendered"; then
  echo "undeploy: $dir holds CustomResourceDefinitions; deleting them would delete every Drink, Guestbook and OperatorConfig." >&2
  echo "undeploy: nothing deleted. make undeploy removes the operator alone (config/operator); make uninstall removes the CRDs, after confirmation." >&2
  exit 1
fi
"${kc[@]}" delete --ignore-not-found --wait=true -f - <<<"$rendered"
