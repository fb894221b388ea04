#!/usr/bin/env bash
# What make run does before it starts the manager on this host: the
# course's `make install && make run` needs nothing else.
#
# - Refuses when the operator is deployed in the cluster (its Deployment in
#   myoperator-system): the in-cluster replicas serve the webhooks and the
#   Drink conversion through their Service, and pointing them at this host
#   would take that from them. The one command to run first is printed.
# - Otherwise applies config/local (make install-local): the CRDs, the
#   webhook configurations and the Drink conversion calling
#   https://localhost:RUN_WEBHOOK_PORT, the manager's namespace with its
#   certificate Secret, the operand namespace.
#
# make install-local runs it too (WHO names the target in its messages).
#
# Usage: [WHO="make run"] KUBECTL=kubectl RUN_WEBHOOK_PORT=9443 hack/run-local.sh
set -euo pipefail
cd "$(dirname "$0")/.."
kubectl=${KUBECTL:-kubectl}
port=${RUN_WEBHOOK_PORT:?set RUN_WEBHOOK_PORT}
who=${WHO:-make run}

deployed=$($kubectl get deployment myoperator-controller-manager -n myoperator-system --ignore-not-found -o name) ||
  { echo "$who: cannot read the cluster of the current kubeconfig (above)" >&2; exit 1; }
if [ -n "$deployed" ]; then
  cat >&2 <<MSG
$who: the operator is deployed in this cluster (deployment myoperator-system/myoperator-controller-manager);
its pods serve the webhooks and the Drink conversion, which a manager on this host would take over.
Remove it first (CRDs, custom resources and operands stay):

  make undeploy

MSG
  exit 1
fi
$kubectl kustomize config/local | sed "s#https://localhost:9443/#https://localhost:$port/#" | $kubectl apply --server-side -f - >/dev/null
echo "$who: applied config/local (webhooks and the Drink conversion on https://localhost:$port)"
