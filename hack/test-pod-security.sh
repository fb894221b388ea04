#!/usr/bin/env bash
# In a kwok cluster (real kube-apiserver with Pod Security admission, real
# kube-controller-manager), installs config/default and checks that the
# controller manager creates the operator's two pods in the namespace that
# enforces Pod Security "restricted". Then the same Deployment with one
# restricted rule broken (runAsNonRoot removed) must get no pod, with a
# PodSecurity violation reported on its ReplicaSet.
#
# Usage: hack/test-pod-security.sh   (K8S_BIN, NETNS as for dev-cluster.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
name=myoperator-podsecurity
kubeconfig=$root/bin/$name.kubeconfig
export K8S_BIN NETNS
trap '"$root/hack/dev-cluster.sh" down $name "$kubeconfig" >/dev/null 2>&1 || true' EXIT
"$root/hack/dev-cluster.sh" down $name "$kubeconfig" >/dev/null 2>&1 || true
"$root/hack/dev-cluster.sh" up $name "$kubeconfig" >/dev/null
kc() { "$root/hack/netns.sh" "$NETNS" kubectl --kubeconfig "$kubeconfig" "$@"; }

rendered=$("$root/hack/render-default.sh" myoperator:test)
kc apply --server-side -f - <<<"$rendered" >/dev/null
kc get namespace myoperator-system -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}' | grep -qx restricted
for i in $(seq 60); do
  n=$(kc -n myoperator-system get pods -l control-plane=controller-manager --no-headers 2>/dev/null | wc -l)
  [ "$n" -ge 2 ] && break
  sleep 1
done
kc -n myoperator-system get pods -l control-plane=controller-manager -o wide
[ "$n" -ge 2 ] || { echo "test-pod-security: $n operator pods created, want 2"; kc -n myoperator-system describe rs; exit 1; }
echo "test-pod-security: the controller manager created $n operator pods under Pod Security restricted"

# The same Deployment, runAsNonRoot removed: restricted must refuse its pods.
kc -n myoperator-system get deployment myoperator-controller-manager -o json \
  | python3 -c '
import json, sys
d = json.load(sys.stdin)
for k in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
    d["metadata"].pop(k, None)
d.pop("status", None)
d["metadata"]["name"] = "broken"
labels = {"app.kubernetes.io/name": "broken"}
d["spec"]["selector"]["matchLabels"] = labels
d["spec"]["template"]["metadata"]["labels"] = labels
del d["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"]
json.dump(d, sys.stdout)' | kc apply -f - >/dev/null
for i in $(seq 60); do
  msg=$(kc -n myoperator-system get rs -l app.kubernetes.io/name=broken -o jsonpath='{.items[*].status.conditions[?(@.type=="ReplicaFailure")].message}' 2>/dev/null || true)
  [ -n "$msg" ] && break
  sleep 1
done
pods=$(kc -n myoperator-system get pods -l app.kubernetes.io/name=broken --no-headers 2>/dev/null | wc -l)
echo "test-pod-security: broken Deployment: $pods pods; ReplicaSet says: $msg"
[ "$pods" = 0 ] && grep -q "violates PodSecurity" <<<"$msg" || { echo "test-pod-security: a pod that breaks restricted was not refused"; exit 1; }
echo "test-pod-security: passed"
