#!/usr/bin/env bash
# What make run does: the course's `make install && make run` needs nothing
# else. make install-local does the first three steps only.
#
# 1. Chooses where the API server can call a manager on this host
#    (hack/runhost: kind's bridge address, host.minikube.internal,
#    host.docker.internal, localhost, or RUN_WEBHOOK_HOST), before anything
#    touches the cluster; where no address can work (a cluster behind a
#    gateway) it stops there and prints what works, make deploy.
# 2. Refuses when the operator is deployed in the cluster (its Deployment in
#    myoperator-system): the in-cluster replicas serve the webhooks and the
#    Drink conversion through their Service, and pointing them at this host
#    would take that from them. The one command to run first is printed.
# 3. Applies config/local with its URLs on the chosen address and
#    RUN_WEBHOOK_PORT: the CRDs, the webhook configurations and the Drink
#    conversion, the manager's namespace with its certificate Secret, the
#    operand namespace.
# 4. (run) Runs the bootstrap as the initContainer does, then the manager,
#    listening on the chosen address, its certificate valid for it.
#
# Usage: [WHO="make run"] KUBECTL=kubectl RUN_WEBHOOK_PORT=9443 [RUN_PROBE_ADDR=127.0.0.1:8081] hack/run-local.sh install|run
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: run-local.sh install|run}
kubectl=${KUBECTL:-kubectl}
port=${RUN_WEBHOOK_PORT:?set RUN_WEBHOOK_PORT}
who=${WHO:-make run}

mkdir -p bin
go build -o bin/runhost ./hack/runhost
choice=$(bin/runhost) || exit
host="" bind="" ips="" dns=""
while IFS== read -r k v; do
  case $k in
    HOST) host=$v ;; BIND) bind=$v ;; IPS) ips=$v ;; DNS) dns=$v ;;
  esac
done <<<"$choice"
[ -n "$host" ] || { echo "$who: hack/runhost chose no address" >&2; exit 1; }

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
$kubectl kustomize config/local | sed "s#https://localhost:9443/#https://$host:$port/#" | $kubectl apply --server-side -f - >/dev/null
echo "$who: applied config/local (webhooks and the Drink conversion on https://$host:$port)"
[ "$mode" = run ] || exit 0

# What the initContainer does in the cluster: OperatorConfig cluster, with
# defaults, when it is absent.
go run ./initcontainer --zap-devel
exec go run . --namespace=myoperator-system --webhook-host="$bind" --webhook-port="$port" \
  --webhook-extra-dns-names="$dns" --webhook-extra-ip-addresses="$ips" \
  --metrics-bind-address=0 --health-probe-bind-address="${RUN_PROBE_ADDR:-127.0.0.1:8081}" --zap-devel
