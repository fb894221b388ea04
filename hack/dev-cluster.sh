#!/usr/bin/env bash
# Starts or deletes a local kwok cluster (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok's fake nodes) on the
# project-built binaries, inside the project's network namespace.
#
# Usage: hack/dev-cluster.sh up|down|smoke NAME KUBECONFIG
# Environment: K8S_BIN (folder of the binaries), NETNS (namespace name),
# RUNNER_PODS (a jq query true for the pods a pod runner will run, as make
# demo's does: kwok leaves their readiness and their removal after deletion
# to the runner, hack/kwokconfig; empty keeps kwok's default stages).
set -euo pipefail
cmd=${1:?usage: dev-cluster.sh up|down|smoke NAME KUBECONFIG}
name=${2:?cluster name}
kubeconfig=${3:?kubeconfig path}
root=$(cd "$(dirname "$0")/.." && pwd)
K8S_BIN=${K8S_BIN:?set K8S_BIN to the folder of the Kubernetes binaries}
NETNS=${NETNS:-myoperator-test}
export KWOK_WORKDIR=${KWOK_WORKDIR:-$root/bin/kwok}
in_ns() { "$root/hack/netns.sh" "$NETNS" "$@"; }
kc() { in_ns kubectl --kubeconfig "$kubeconfig" "$@"; }

# The cluster's kwokctl configuration: the API server's aggregator routing
# (see the file), and with RUNNER_PODS the stages of a pod runner's pods.
config=$root/hack/kwok/aggregator-routing.yaml
RUNNER_PODS=${RUNNER_PODS:-}

up() {
  mkdir -p "$(dirname "$kubeconfig")" "$KWOK_WORKDIR"
  if [ -n "$RUNNER_PODS" ]; then
    config=$KWOK_WORKDIR/$name-kwokctl.yaml
    (cd "$root" && go run ./hack/kwokconfig -kwokctl "$K8S_BIN/kwokctl" -runner-pods "$RUNNER_PODS" -out "$config")
  fi
  echo "dev-cluster: creating kwok cluster $name (binary runtime, network namespace $NETNS, aggregator routing)..."
  in_ns "$K8S_BIN/kwokctl" create cluster --name "$name" --runtime binary \
    --config "$config" \
    --kubeconfig "$kubeconfig" \
    --etcd-binary "$K8S_BIN/etcd" \
    --kube-apiserver-binary "$K8S_BIN/kube-apiserver" \
    --kube-controller-manager-binary "$K8S_BIN/kube-controller-manager" \
    --kube-scheduler-binary "$K8S_BIN/kube-scheduler" \
    --kwok-controller-binary "$K8S_BIN/kwok" \
    --wait 2m
  # kwok gives each pod an IP from its node's pod CIDR (status.podIP);
  # make demo's pod runner serves the operator's pods at those IPs on
  # loopback in the network namespace, so that the webhook Service's
  # endpoints answer. 10.245/16 stays apart from the e2e suite's fake nodes
  # (10.244/16), so both can run in the same namespace without clashing.
  echo "dev-cluster: adding fake nodes (pod CIDRs 10.245.0-2.0/24)..."
  for i in 0 1 2; do
    kc apply -f - <<NODE
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    topology.kubernetes.io/zone: zone-$i
spec:
  podCIDR: 10.245.$i.0/24
  podCIDRs:
  - 10.245.$i.0/24
  taints: []
NODE
  done
  kc wait --for=condition=Ready node --all --timeout=60s
  cat <<MSG

dev-cluster: cluster "$name" is up. Its API server listens on loopback inside the
network namespace "$NETNS", so talk to it from there:

  hack/netns.sh $NETNS kubectl --kubeconfig $kubeconfig get nodes
  hack/netns.sh $NETNS bash   # then: export KUBECONFIG=$kubeconfig

Delete it with: make dev-cluster-down
MSG
}

down() {
  echo "dev-cluster: deleting kwok cluster $name..."
  in_ns "$K8S_BIN/kwokctl" delete cluster --name "$name" --kubeconfig "$kubeconfig" || true
  rm -f "$kubeconfig"
}

# smoke: a Deployment's pods reach Running on the fake nodes.
smoke() {
  kc create deployment smoke --image=registry.k8s.io/pause:3.10 --replicas=3 --dry-run=client -o yaml | kc apply -f -
  local start=$SECONDS
  kc rollout status deployment/smoke --timeout=90s
  kc get pods -l app=smoke -o wide
  local running
  running=$(kc get pods -l app=smoke --field-selector=status.phase=Running -o name | wc -l)
  echo "dev-cluster: $running/3 pods Running after $((SECONDS - start))s"
  kc delete deployment smoke --wait=false
  [ "$running" = 3 ]
}

case $cmd in
  up) up ;;
  down) down ;;
  smoke) smoke ;;
  *) echo "usage: dev-cluster.sh up|down|smoke NAME KUBECONFIG" >&2; exit 2 ;;
esac
