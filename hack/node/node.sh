#!/usr/bin/env bash
# The real-node experiment (docs/REAL-NODE.md): a kwok cluster's
# control plane (etcd, kube-apiserver, controller-manager, scheduler) plus one
# real node, containerd + kubelet + kube-proxy on the bridge CNI, all inside
# the project's network namespace. Run as root, after make node-binaries and
# make k8s-binaries (outside the namespace: nothing downloads here).
#
# Usage: hack/node/node.sh up|down|smoke|import IMAGE...|kill CONTAINER-ID
#   up     start the cluster, containerd (pause and hello images imported),
#          the kubelet and kube-proxy; wait for the Node to be Ready
#   import copy images from podman's store into the node's containerd
#          (podman save, ctr images import): what the e2e suite runs there
#   kill   SIGKILL a container through the runtime (ctr tasks kill), as an
#          OOM kill or a crash would: the kubelet restarts it
#   smoke  a hello Deployment + ClusterIP Service: pod IP, ClusterIP, logs,
#          pod -> API server, API server -> webhook Service, container
#          killed through the runtime, a static pod
#   down   stop every process up started, unmount what they mounted, delete
#          the cluster and the bridge (idempotent)
# Environment: NODE_BIN, K8S_BIN (binary folders), NETNS, NODE_WORK (state
# folder, default bin/node-work in the repository), NODE_NAME, KEEP_NETNS=1
# (down keeps the namespace).
#
# It runs as root, and its state folder holds the kubelet's static pod
# manifests, the pid files it signals and the archives it imports: the
# folder must be private. It is refused when it is a symbolic link, is not
# a folder, or belongs to another user; it is made, and kept, mode 0700.
# (It used to be a fixed path under /tmp, which any user can create first.)
#
# Every daemon runs under `nsenter --net` only (hack/netns.sh): `ip netns exec`
# would remount /sys, and runc then finds no cgroups (FACTS.md).
set -euo pipefail
cmd=${1:?usage: node.sh up|down|smoke}
root=$(cd "$(dirname "$0")/../.." && pwd)
NODE_BIN=${NODE_BIN:-$root/bin/node/v1.37.2}
K8S_BIN=${K8S_BIN:-$root/bin/k8s/v1.37.2}
# Its own namespace by default (same script, same isolation as the tests'):
# kube-proxy rewrites the namespace's iptables and the bridge adds routes,
# which other suites running at the same time in myoperator-test should not
# see.
NETNS=${NETNS:-myoperator-node}
W=${NODE_WORK:-$root/bin/node-work}
# private_dir DIR: DIR, made if absent, is a folder of this user's, mode 0700.
private_dir() {
  local d=$1
  [ ! -L "$d" ] || { echo "node.sh: $d is a symbolic link; refusing it as the state folder" >&2; exit 1; }
  if [ ! -e "$d" ]; then (umask 077 && mkdir -p -- "$d") || exit 1; fi
  [ -d "$d" ] || { echo "node.sh: $d is not a folder" >&2; exit 1; }
  local owner
  owner=$(stat -c %u -- "$d")
  [ "$owner" = "$(id -u)" ] || { echo "node.sh: $d belongs to uid $owner, not to uid $(id -u); refusing it as the state folder" >&2; exit 1; }
  chmod 0700 -- "$d"
}
private_dir "$W"
NODE_NAME=${NODE_NAME:-myoperator-node}
CLUSTER=${CLUSTER:-myoperator-node}
NODE_IP=192.0.2.1 # hack/netns.sh's address on v0
POD_SUBNET=10.244.0.0/24
export KWOK_WORKDIR=$W/kwok
kubeconfig=$W/kubeconfig
sock=$W/containerd/containerd.sock
pki=$KWOK_WORKDIR/clusters/$CLUSTER/pki

t0=$(date +%s)
say() { printf '[node %4ss] %s\n' "$(( $(date +%s) - t0 ))" "$*"; }
in_ns() { "$root/hack/netns.sh" "$NETNS" "$@"; }
kc() { in_ns kubectl --kubeconfig "$kubeconfig" "$@"; }
ctr() { in_ns "$NODE_BIN/ctr" --address "$sock" -n k8s.io "$@"; }

# start NAME CMD...: runs CMD in the namespace in the background, its output
# in $W/NAME.log and its pid in $W/NAME.pid. netns.sh execs nsenter, which
# execs the command (no fork for a network namespace), and setsid makes it a
# process group leader, so stop can signal the whole group.
start() {
  local name=$1; shift
  say "starting $name: $*"
  setsid "$root/hack/netns.sh" "$NETNS" "$@" >"$W/$name.log" 2>&1 </dev/null &
  echo $! >"$W/$name.pid"
}

# wait_for WHAT SECONDS CMD...: polls CMD every second.
wait_for() {
  local what=$1 secs=$2; shift 2
  for _ in $(seq "$secs"); do
    if "$@" >/dev/null 2>&1; then say "$what: ok"; return 0; fi
    sleep 1
  done
  say "$what: NOT within ${secs}s"; return 1
}

write_configs() {
  mkdir -p "$W"/{containerd/root,containerd/state,cni/net.d,kubelet,manifests,logs}
  cat >"$W/containerd/config.toml" <<EOF
# containerd 2.x for the experiment's node: own root, state and socket, the
# cgroupfs driver (no systemd here), the project-built pause image as the
# sandbox (pinned: never pulled), our CNI plugins and config.
version = 3
root = "$W/containerd/root"
state = "$W/containerd/state"

[grpc]
  address = "$sock"

[ttrpc]
  address = "$sock.ttrpc"

[debug]
  level = "info"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$(cat "$NODE_BIN/pause.image")"

[plugins.'io.containerd.cri.v1.runtime']
  netns_mounts_under_state_dir = true
  # No CAP_SYS_RESOURCE here: a negative oom_score_adj (the sandbox's -998)
  # fails with EACCES and runc dies with "can't get final child's PID from
  # pipe: EOF". This clamps every value to containerd's own (0) or above.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$NODE_BIN/cni"]
    conf_dir = "$W/cni/net.d"

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
  cat >"$W/cni/net.d/10-bridge.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "myoperator-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$W/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
  cat >"$W/kubelet/config.yaml" <<EOF
# The experiment's kubelet: cgroup v1 allowed (KEP-5573, FACTS.md), the
# cgroupfs driver like containerd, our containerd's socket; the API server's
# admin credentials (experiment only); no swap check, eviction thresholds low
# enough that a small disk does not evict.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$sock
failSwapOn: false
staticPodPath: $W/manifests
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: AlwaysAllow
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
clusterDomain: cluster.local
resolvConf: ""
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
  cat >"$W/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $kubeconfig
mode: iptables
hostnameOverride: $NODE_NAME
clusterCIDR: 10.244.0.0/16
bindAddress: $NODE_IP
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
conntrack:
  maxPerCore: 0
EOF
}

up() {
  for b in kubelet kube-proxy containerd containerd-shim-runc-v2 ctr cni/bridge pause.tar hello.tar; do
    [ -e "$NODE_BIN/$b" ] || { echo "node.sh: $NODE_BIN/$b missing: run make node-binaries first" >&2; exit 1; }
  done
  # A fresh node each time: down has unmounted everything under $W.
  rm -rf "$W"/containerd "$W"/cni "$W"/kubelet "$W"/manifests
  say "kwokctl create cluster $CLUSTER (binary runtime, netns $NETNS)"
  # The project-built control plane, named through kwokctl's environment
  # (as the e2e suite does). No kwok controller: it manages all nodes and
  # would mark this one's pods Running with fake IPs, no container behind.
  # The API server reaches the kubelet (logs, exec) at its InternalIP: the
  # node's name resolves nowhere here, and a DNS lookup would leave the host.
  # It authenticates to the kubelet with kwokctl's admin certificate, which
  # the kubelet's clientCAFile (kwokctl's CA) accepts.
  # Pods reach the API server at the kubernetes Service's ClusterIP
  # (10.0.0.1 in the default range): its serving certificate must name it.
  printf 'apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  kubeApiserverCertSANs: ["10.0.0.1"]\n' >"$W/kwokctl.yaml"
  KWOK_RUNTIME=binary KWOK_ETCD_BINARY=$K8S_BIN/etcd KWOK_KUBE_APISERVER_BINARY=$K8S_BIN/kube-apiserver \
    KWOK_KUBE_CONTROLLER_MANAGER_BINARY=$K8S_BIN/kube-controller-manager \
    KWOK_KUBE_SCHEDULER_BINARY=$K8S_BIN/kube-scheduler KWOK_CONTROLLER_BINARY=$K8S_BIN/kwok \
    in_ns "$K8S_BIN/kwokctl" create cluster --name "$CLUSTER" --kubeconfig "$kubeconfig" --wait 2m \
    --config "$W/kwokctl.yaml" \
    --disable kwok-controller --extra-args kube-apiserver=kubelet-preferred-address-types=InternalIP \
    --extra-args kube-apiserver=kubelet-client-certificate="$pki/admin.crt" \
    --extra-args kube-apiserver=kubelet-client-key="$pki/admin.key"
  write_configs

  # containerd finds the shim (containerd-shim-runc-v2) on its PATH.
  start containerd env PATH="$NODE_BIN:$PATH" "$NODE_BIN/containerd" --config "$W/containerd/config.toml"
  wait_for "containerd socket" 30 ctr version
  for img in pause hello; do
    say "ctr images import $img.tar"
    ctr images import "$NODE_BIN/$img.tar"
  done
  ctr images ls -q

  start kubelet "$NODE_BIN/kubelet" --config "$W/kubelet/config.yaml" --kubeconfig "$kubeconfig" \
    --root-dir "$W/kubelet/root" --cert-dir "$W/kubelet/pki" --hostname-override "$NODE_NAME" \
    --node-ip "$NODE_IP" --v=2
  wait_for "Node $NODE_NAME registered" 60 kc get node "$NODE_NAME"
  wait_for "Node $NODE_NAME Ready" 120 kc wait --for=condition=Ready node/"$NODE_NAME" --timeout=1s
  start kube-proxy "$NODE_BIN/kube-proxy" --config "$W/kube-proxy.yaml" --v=2
  wait_for "kube-proxy healthz" 30 in_ns curl -sf http://127.0.0.1:10256/healthz
  kc get node -o wide
}

# smoke: each check prints its result; the exit status is non-zero when one
# fails. The hello pods carry the restricted Pod Security settings the
# operator's own pods use.
smoke() {
  local img; img=$(cat "$NODE_BIN/hello.image")
  kc apply -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: hello, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: hello
        image: $img
        imagePullPolicy: Never
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 2}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {name: hello, namespace: default}
spec:
  selector: {app: hello}
  ports: [{port: 80, targetPort: 8080}]
EOF
  local rc=0 s0=$SECONDS
  kc rollout status deployment/hello --timeout=120s || rc=1
  say "rollout: $((SECONDS - s0))s"
  kc get pod -o wide
  ctr containers ls
  local ip podip body pod cid pid
  pod=$(kc get pod -l app=hello -o jsonpath='{.items[0].metadata.name}')
  podip=$(kc get pod "$pod" -o jsonpath='{.status.podIP}')
  ip=$(kc get svc hello -o jsonpath='{.spec.clusterIP}')
  body=$(in_ns curl -sf -m 5 "http://$podip:8080/") || rc=1
  say "pod IP $podip:8080: ${body:-FAILED}"
  # kube-proxy programs the Service once its EndpointSlice lists the Ready
  # pods, a moment after the rollout: until then the ClusterIP refuses.
  local answers=answers; s0=$SECONDS
  until in_ns curl -sf -m 2 -o /dev/null "http://$ip/"; do
    [ $((SECONDS - s0)) -lt 30 ] || { rc=1; answers='does NOT answer'; break; }
    sleep 0.2
  done
  say "ClusterIP $ip:80 $answers $((SECONDS - s0))s after the rollout"
  for _ in 1 2 3 4; do
    body=$(in_ns curl -sf -m 5 "http://$ip/") || rc=1
    say "ClusterIP $ip:80: ${body:-FAILED}"
  done
  say "kubectl logs (API server -> kubelet :10250): $(kc logs "$pod" --tail=1 2>&1)"

  # From inside a pod's network namespace (its container's pid), through
  # the kubernetes Service: what in-cluster config does.
  cid=$(kc get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}'); cid=${cid#containerd://}
  pid=$(ctr tasks ls 2>/dev/null | awk -v id="$cid" '$1 == id {print $2}')
  if [ -n "$pid" ]; then
    body=$(nsenter --net="/proc/$pid/ns/net" curl -sk -m 5 -o /dev/null -w '%{http_code}' https://10.0.0.1/readyz) || true
    say "pod $pod -> https://10.0.0.1/readyz (kubernetes Service): HTTP ${body:-none}"
    say "pod process: $(grep -E '^(Uid|CapEff|Seccomp):' "/proc/$pid/status" | tr -s '\t\n' '  ')oom_score_adj $(cat "/proc/$pid/oom_score_adj")"
  fi
  [ "${body:-}" = 200 ] || rc=1

  # The API server calls a webhook through its Service's ClusterIP (no
  # aggregator routing). hello answers plain HTTP, so reaching it shows as
  # "server gave HTTP response to HTTPS client".
  kc apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: node-smoke}
webhooks:
- name: hello.node-smoke.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  objectSelector: {matchLabels: {node-smoke: webhook}}
  rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}]
  clientConfig: {service: {namespace: default, name: hello, port: 80, path: /validate}}
EOF
  sleep 1
  body=$(kc create configmap node-smoke --dry-run=client -o json | jq '.metadata.labels["node-smoke"] = "webhook"' | kc create -f - 2>&1) || true
  kc delete validatingwebhookconfiguration node-smoke >/dev/null
  say "API server -> webhook Service: $body"
  case "$body" in *"server gave HTTP response to HTTPS client"*) ;; *) rc=1 ;; esac

  # A container killed through the runtime: the kubelet restarts it.
  local t0ns; t0ns=$(date +%s%N)
  ctr tasks kill -s KILL "$cid" >/dev/null 2>&1
  until [ "$(kc get pod "$pod" -o jsonpath='{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].ready}')" = 1/true ]; do
    [ $(( ($(date +%s%N) - t0ns) / 1000000000 )) -lt 60 ] || { rc=1; break; }
    sleep 0.2
  done
  say "container killed with ctr: restarted and Ready after $(( ($(date +%s%N) - t0ns) / 1000000 )) ms ($(kc get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}'))"

  # A static pod from the kubelet's manifest folder, and its mirror pod.
  printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: static-pause, namespace: default}\nspec:\n  containers: [{name: pause, image: %s, imagePullPolicy: Never}]\n' \
    "$(cat "$NODE_BIN/pause.image")" >"$W/manifests/static-pause.yaml"
  s0=$SECONDS
  until kc wait --for=condition=Ready "pod/static-pause-$NODE_NAME" --timeout=1s >/dev/null 2>&1; do
    [ $((SECONDS - s0)) -lt 60 ] || { rc=1; break; }
    sleep 1
  done
  say "static pod: $(kc get pod "static-pause-$NODE_NAME" --no-headers -o wide 2>&1 | awk '{print $1, $2, $3, $6}') after $((SECONDS - s0))s"
  rm -f "$W/manifests/static-pause.yaml"

  kc delete deployment/hello service/hello --wait=false >/dev/null
  say "smoke: $([ $rc = 0 ] && echo PASS || echo FAIL)"
  return $rc
}

down() {
  for name in kube-proxy kubelet; do stop "$name"; done
  # Pods' containers and sandboxes, through containerd while it still runs;
  # then containerd itself (its shims outlive it and are killed after).
  if [ -S "$sock" ]; then
    ctr tasks ls -q 2>/dev/null | while read -r id; do ctr tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
    sleep 1
    ctr tasks ls -q 2>/dev/null | while read -r id; do ctr tasks delete -f "$id" >/dev/null 2>&1 || true; done
    ctr containers ls -q 2>/dev/null | while read -r id; do ctr containers delete "$id" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  # The runc shims whose bundles live under our state dir.
  for pid in $(pgrep -f "containerd-shim-runc-v2 -namespace k8s.io" || true); do
    if tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null | grep -q -- "-address $sock"; then kill -9 "$pid" 2>/dev/null || true; fi
  done
  in_ns "$K8S_BIN/kwokctl" delete cluster --name "$CLUSTER" --kubeconfig "$kubeconfig" >/dev/null 2>&1 || true
  # Every mount under the work folder, deepest first (overlay rootfs, netns,
  # the kubelet's rshared root dir and its volumes' tmpfs).
  awk -v w="$W" 'index($5, w) == 1 {print $5}' /proc/self/mountinfo | sort -r | while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done
  # The cgroups the kubelet (kubepods) and containerd (k8s.io, ctr's default
  # parent) made in every v1 hierarchy; rmdir removes only empty ones.
  find /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/k8s.io -depth -type d -exec rmdir {} + 2>/dev/null || true
  # kube-proxy's rules and the bridge live in the namespace: delete it when
  # it is the experiment's own (the shared test namespace only loses cni0),
  # unless KEEP_NETNS=1 says that the caller runs in it (the e2e suite: a
  # later up would otherwise make a new namespace of the same name).
  if [ "$NETNS" = myoperator-test ] || [ -n "${KEEP_NETNS:-}" ]; then in_ns ip link del cni0 2>/dev/null || true
  else ip netns del "$NETNS" 2>/dev/null || true; fi
  say "down: left: $(awk -v w="$W" 'index($5, w) == 1' /proc/self/mountinfo | wc -l) mounts under $W, $(find /sys/fs/cgroup/*/kubepods -maxdepth 0 2>/dev/null | wc -l) kubepods cgroups"
}

# stop NAME: SIGTERM the process group start gave NAME, SIGKILL after 10 s.
stop() {
  local f=$W/$1.pid pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    for _ in $(seq 10); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$f"
  say "stopped $1"
}

# import IMAGE...: each image from podman's store into containerd's k8s.io
# namespace, where the kubelet finds it (imagePullPolicy IfNotPresent or
# Never): nothing is pulled on the node.
import_images() {
  local img tar
  for img in "$@"; do
    tar=$(mktemp -p "$W" import-XXXXXXXX.tar)
    rm -f "$tar"
    podman save --format oci-archive -o "$tar" "$img" >/dev/null
    ctr images import "$tar" >/dev/null
    rm -f "$tar"
    say "imported $img"
  done
}

case "$cmd" in
  up) up ;;
  import) shift; import_images "$@" ;;
  kill) ctr tasks kill -s KILL "${2:?usage: node.sh kill CONTAINER-ID}" ;;
  down) down ;;
  smoke) smoke ;;
  *) echo "usage: node.sh up|down|smoke|import IMAGE...|kill CONTAINER-ID" >&2; exit 2 ;;
esac
