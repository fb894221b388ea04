#!/usr/bin/env bash
# make demo and make demo-down: the whole operator on a local kwok cluster,
# from its image, with the samples applied and a summary printed.
#
#   hack/demo.sh preflight  root and podman (before anything is built)
#   hack/demo.sh up         cluster, image, install (config/default), pod
#                           runner, samples, wait, summary; reuses what is up
#                           to date
#   hack/demo.sh status     the summary again
#   hack/demo.sh down       removes everything up started
#
# The cluster is the e2e suite's setting: kwok nodes run no containers, so a
# background process (hack/demo, test/podrunner) plays the kubelet for
# the operator's pods under podman. The install is the production
# config/default with only the image changed: the API server (run with
# aggregator routing by dev-cluster.sh) calls the webhooks through the
# Service myoperator-webhook-service at its ready endpoints, the pods' IPs,
# which kwok assigns from the nodes' pod CIDRs (10.245.<node>.0/24) and the
# pod runner serves on loopback. The demo uses its own host ports (from
# 31000) and pod IPs (10.245/16), so it can keep running while the e2e
# suite (30000, 10.244/16) or make run (127.0.0.1:9443, 8081) use the same
# network namespace.
#
# Pods as a kubelet runs them: the demo's cluster is made with the stages
# of hack/kwokconfig for the operator's namespace (RUNNER_PODS), so kwok
# neither marks the operator's pods Ready when they are scheduled nor
# removes them at once when they are deleted: the pod runner writes their
# Ready from the readiness probe (a starting pod joins the Service's
# endpoints only once it serves), and a deleted pod, withdrawn from the
# endpoints, keeps running through its preStop sleep and SIGTERM and is
# removed once its containers have stopped (its ServiceAccount token, bound
# to the pod, works until then: the leader releases its Lease on the way
# out). A rolling restart or a node drain then fails no request
# (make test-demo restarts the operator under load).
#
# Environment: K8S_BIN (folder of the Kubernetes binaries), NETNS.
set -euo pipefail
cmd=${1:?usage: demo.sh preflight|up|status|down}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
NETNS=${NETNS:-myoperator-test}
cluster=${DEMO_CLUSTER:-myoperator-demo}
kubeconfig=$root/bin/demo.kubeconfig
dir=$root/bin/demo
host_port_base=31000
prefix=demo-
operator_ns=myoperator-system
deployment=myoperator-controller-manager
operator_pods=app.kubernetes.io/name=myoperator,control-plane=controller-manager
lease=myoperator.example.com
# The pods the pod runner runs, as a kwok stage selector's query.
runner_pods=".metadata.namespace == \"$operator_ns\""
export KWOK_WORKDIR=$dir/kwok
podman=(podman --cgroup-manager=cgroupfs --runtime /usr/sbin/runc)

start=$(date +%s)
step() { printf '[demo %4ss] %s\n' "$(($(date +%s) - start))" "$*"; }
fail() {
  printf '[demo %4ss] FAILED: %s\n' "$(($(date +%s) - start))" "$*" >&2
  exit 1
}
in_ns() { "$root/hack/netns.sh" "$NETNS" "$@"; }
kc() { in_ns kubectl --kubeconfig "$kubeconfig" "$@"; }

preflight() {
  if [ "$(id -u)" != 0 ]; then
    echo "demo: needs root: the cluster runs in a network namespace (hack/netns.sh) and podman runs the operator's pods; run: sudo make demo" >&2
    exit 1
  fi
  "$root/hack/ensure-podman.sh"
  command -v kubectl >/dev/null || fail "kubectl not found (it builds the manifests and talks to the cluster)"
}

runner_pid() {
  local pid
  pid=$(cat "$dir/podrunner.pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

# image: the operator's image, built with podman from the Dockerfile and
# bin/manager, bin/bootstrap, tagged with a digest of those inputs
# (localhost/myoperator-demo:<digest>): reused when that tag exists, and a
# new tag changes the Deployment's pod template, so the cluster rolls the
# operator's pods onto it. The tag the manifests name (the e2e suite's)
# stays its own.
# Sets img.
img=
image() {
  local inputs old
  inputs=$(cat Dockerfile bin/manager bin/bootstrap | sha256sum | cut -c1-16)
  img=localhost/myoperator-demo:$inputs
  if "${podman[@]}" image exists "$img"; then
    step "image $img: up to date (same Dockerfile and binaries), reused"
    return
  fi
  step "image $img: building with podman..."
  "${podman[@]}" build -q -t "$img" . >/dev/null
  step "image $img: built"
  # Earlier demo images' tags; one that a container still runs stays. The
  # filter selects images, and lists every name of each: an image built from
  # the same binaries also carries the e2e suite's tag
  # (ghcr.io/example/myoperator:...), which must not go with it.
  old=$("${podman[@]}" images --format '{{.Repository}}:{{.Tag}}' --filter reference=localhost/myoperator-demo | grep '^localhost/myoperator-demo:' | grep -vx "$img" || true)
  # shellcheck disable=SC2086 # one name per word
  [ -z "$old" ] || "${podman[@]}" rmi $old >/dev/null 2>&1 || true
}

cluster_up() {
  if [ -s "$kubeconfig" ] && kc get --raw /readyz >/dev/null 2>&1; then
    # A cluster from before the demo called the webhooks through the
    # Service has nodes without pod CIDRs (nor aggregator routing); one
    # from before the pod runner terminated pods has kwok's own stages.
    if [ "$(kc get node kwok-node-0 -o jsonpath='{.spec.podCIDR}' 2>/dev/null)" = 10.245.0.0/24 ] &&
      grep -qs pod-ready-probed-by-runner "$KWOK_WORKDIR/$cluster-kwokctl.yaml"; then
      step "cluster $cluster: running, reused ($kubeconfig)"
      return
    fi
    step "cluster $cluster: made by an older demo (no pod CIDRs on its nodes, or kwok's own pod stages); deleting it to start again..."
    runner_down
    in_ns "$K8S_BIN/kwokctl" delete cluster --name "$cluster" --kubeconfig "$kubeconfig" >/dev/null
  fi
  if in_ns "$K8S_BIN/kwokctl" get clusters 2>/dev/null | grep -qx "$cluster"; then
    step "cluster $cluster: present but not answering; deleting it to start again..."
    in_ns "$K8S_BIN/kwokctl" delete cluster --name "$cluster" --kubeconfig "$kubeconfig" >/dev/null
  fi
  step "cluster $cluster: creating (kwok, binary runtime, network namespace $NETNS)..."
  # dev-cluster.sh's closing how-to (after its first blank line) is for
  # make dev-cluster; the demo prints its own.
  # kwokctl's JSON log lines go too.
  K8S_BIN=$K8S_BIN NETNS=$NETNS RUNNER_PODS=$runner_pods "$root/hack/dev-cluster.sh" up "$cluster" "$kubeconfig" 2>&1 | sed '/^{"time"/d; /^$/,$d'
  step "cluster $cluster: up"
}

# install applies config/default, the production manifests, with one
# change: the image (the demo's tag). The webhooks and the CRD's conversion
# call the Service myoperator-webhook-service, as in production.
install() {
  local manifests default_img
  step "install: kubectl apply --server-side of config/default (webhooks through the Service myoperator-webhook-service, image $img)..."
  manifests=$(kubectl kustomize config/default)
  default_img=$(sed -n 's/^ *image: *\(.*myoperator.*\)$/\1/p' <<<"$manifests" | sort -u)
  [ "$(wc -l <<<"$default_img")" = 1 ] && [ -n "$default_img" ] || fail "config/default should name one operator image, names: $default_img"
  printf '%s\n' "${manifests//"image: $default_img"/"image: $img"}" |
    kc apply --server-side -f - >"$dir/install.log" 2>&1 ||
    fail "install: see $dir/install.log"
  step "install: $(grep -c . "$dir/install.log") objects applied"
}

runner_up() {
  local pid
  step "pod runner: building hack/demo..."
  go build -o "$dir/podrunner.new" ./hack/demo
  if pid=$(runner_pid); then
    if cmp -s "$dir/podrunner.new" "$dir/podrunner"; then
      rm -f "$dir/podrunner.new"
      step "pod runner: running (pid $pid), reused"
      return
    fi
    step "pod runner: its program changed; stopping pid $pid..."
    runner_down
  fi
  mv "$dir/podrunner.new" "$dir/podrunner"
  # A session of its own (setsid), its output in a file: it outlives make.
  setsid nohup "$root/hack/netns.sh" "$NETNS" "$dir/podrunner" -kubeconfig "$kubeconfig" -dir "$dir" \
    -host-port-base "$host_port_base" -container-prefix "$prefix" \
    >>"$dir/podrunner.log" 2>&1 </dev/null &
  for _ in $(seq 50); do
    if pid=$(runner_pid); then
      step "pod runner: started (pid $pid; serves each pod at its pod IP; log $dir/podrunner.log, container logs $dir/pods/)"
      return
    fi
    sleep 0.2
  done
  tail -5 "$dir/podrunner.log" >&2 || true
  fail "pod runner did not start; see $dir/podrunner.log"
}

# wait_for SECONDS WHAT CHECK...: runs CHECK every second until it succeeds,
# or fails after SECONDS naming WHAT and where to look.
wait_for() {
  local timeout=$1 what=$2 t0=$SECONDS
  shift 2
  step "waiting for $what (at most ${timeout}s)..."
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS - t0 >= timeout)); then
      fail "timed out after ${timeout}s waiting for $what. Operator logs: $dir/pods/*.log; pod runner: $dir/podrunner.log; state: kubectl get pods,events -A (below); make demo-down removes it all.
$(kc get pods,events -A 2>&1 | tail -20)"
    fi
    sleep 1
  done
  step "$what: done in $((SECONDS - t0))s"
}

# operator_ready: the Deployment's current pods (as many as it asks for,
# none terminating) all pass their readiness probe under the pod runner,
# and one of them holds the Lease.
operator_ready() {
  local want pods holder p
  want=$(kc -n "$operator_ns" get deployment "$deployment" -o jsonpath='{.spec.replicas}')
  pods=$(kc -n "$operator_ns" get pods -l "$operator_pods" -o go-template='{{range .items}}{{if not .metadata.deletionTimestamp}}{{.metadata.name}} {{end}}{{end}}')
  [ -n "$want" ] && [ "$(wc -w <<<"$pods")" -eq "$want" ] || return 1
  for p in $pods; do
    grep -qE "^$p ready=true " "$dir/pods.txt" || return 1
  done
  holder=$(kc -n "$operator_ns" get lease "$lease" -o jsonpath='{.spec.holderIdentity}')
  [[ " $pods " == *" ${holder%%_*} "* ]]
}

samples_ready() {
  kc wait --for=condition=Available operatorconfig/cluster --timeout=1s &&
    kc wait --for=condition=Ready drinks --all -n default --timeout=1s &&
    kc wait --for=condition=Ready guestbooks --all --timeout=1s
}

# close_inherited_fds closes every descriptor above stderr that this script
# inherited (a lock file of flock, make's jobserver pipe): the cluster and
# the pod runner outlive make demo and would otherwise hold them forever.
close_inherited_fds() {
  local fd
  for fd in /proc/$$/fd/*; do
    fd=${fd##*/}
    if [ "$fd" -gt 2 ]; then eval "exec $fd>&-" 2>/dev/null || true; fi
  done
}

up() {
  close_inherited_fds
  mkdir -p "$dir"
  image
  cluster_up
  install
  runner_up
  wait_for 180 "the operator: every replica ready, a leader holding the Lease" operator_ready
  wait_for 60 "kubectl apply -k config/samples/" kc apply -k config/samples/
  wait_for 120 "the samples: Drinks and Guestbook Ready, OperatorConfig Available" samples_ready
  step "demo is up in $(($(date +%s) - start))s"
  status
}

# drink_layouts prints each Drink's authored version and its ConfigMap's
# keys.
drink_layouts() {
  printf '  %-12s %-24s %-10s %-24s %s\n' NAMESPACE DRINK AUTHORED CONFIGMAP KEYS
  kc get drinks.v1.example.com -A -o go-template='{{range .items}}{{.metadata.namespace}} {{.metadata.name}} {{or .status.authoredVersion "-"}} {{or .status.configMapName "-"}}{{"\n"}}{{end}}' |
    while read -r ns name authored cm; do
      keys=-
      if [ "$cm" != - ]; then
        keys=$(kc get configmap -n "$ns" "$cm" -o go-template='{{range $k, $v := .data}}{{$k}} {{end}}' 2>/dev/null || echo "(missing)")
      fi
      printf '  %-12s %-24s %-10s %-24s %s\n' "$ns" "$name" "$authored" "$cm" "$keys"
    done
}

indent() { sed 's/^/  /'; }

status() {
  [ -s "$kubeconfig" ] || fail "no demo cluster ($kubeconfig missing); run make demo"
  local rel=${kubeconfig#"$root"/} gbns
  echo
  echo "== The operator: pods run from the image by the pod runner (leader: $(kc -n "$operator_ns" get lease "$lease" -o jsonpath='{.spec.holderIdentity}' | cut -d_ -f1))"
  indent <"$dir/pods.txt"
  echo
  echo "== Every Drink in every version (the same objects, read through each API version)"
  echo "  example.com/v1alpha1:"
  kc get drinks.v1alpha1.example.com -A -o custom-columns='NAMESPACE:.metadata.namespace,NAME:.metadata.name,SPEC.NAME:.spec.name,SPEC.DRINK:.spec.drink' 2>/dev/null | indent
  echo "  example.com/v1beta1:"
  kc get drinks.v1beta1.example.com -A -o custom-columns='NAMESPACE:.metadata.namespace,NAME:.metadata.name,SPEC.NAME:.spec.name,SPEC.DRINK:.spec.drink,SIZE:.spec.size,SUGAR:.spec.sugar' | indent
  echo "  example.com/v1:"
  kc get drinks.v1.example.com -A -o custom-columns='NAMESPACE:.metadata.namespace,NAME:.metadata.name,DISPLAYNAME:.spec.displayName,BEVERAGE:.spec.beverage,SIZE:.spec.size,SUGARCUBES:.spec.sugarCubes,EXTRAS:.spec.extras,READY:.status.conditions[?(@.type=="Ready")].status' | indent
  echo
  echo "== Each Drink's ConfigMap: its keys are the layout of the version the Drink was written in"
  drink_layouts
  echo
  echo "== Guestbooks and their pods"
  kc get guestbooks -o custom-columns='NAME:.metadata.name,SIZE:.spec.size,NAMESPACE:.status.operandNamespace,ACTIVE:.status.active,STANDBY:.status.standby,READY:.status.conditions[?(@.type=="Ready")].status' | indent
  gbns=$(kc get operatorconfig cluster -o jsonpath='{.status.effective.guestbookNamespace}' 2>/dev/null || true)
  gbns=${gbns:-guestbook}
  kc get pods -n "$gbns" -L webapp.my.domain/role | indent
  echo
  echo "== OperatorConfig cluster: conditions"
  kc get operatorconfig cluster -o go-template='{{range .status.conditions}}{{printf "  %-12s %-6s %-22s %s\n" .type .status .reason .message}}{{end}}'
  echo
  cat <<MSG
== Reach the cluster
  kubeconfig: $kubeconfig
  Its API server listens on loopback inside the network namespace $NETNS, so kubectl runs
  there too. From $root:

  hack/netns.sh $NETNS kubectl --kubeconfig $rel get drinks,guestbooks,operatorconfigs -A
  hack/netns.sh $NETNS kubectl --kubeconfig $rel get pods -n $gbns -L webapp.my.domain/role
  hack/netns.sh $NETNS kubectl --kubeconfig $rel describe operatorconfig cluster

  A shell with the kubeconfig set: hack/netns.sh $NETNS env KUBECONFIG=$kubeconfig bash
  Operator logs: $dir/pods/<pod>_manager.log. Remove everything: make demo-down
MSG
}

# runner_down stops the pod runner: the one in the pid file, and any other
# process running this checkout's bin/demo/podrunner (one whose pid file is
# gone), with SIGTERM so that it stops the operator's containers first.
runner_down() {
  local pids pid alive
  pids=$( (runner_pid || true; pgrep -f "^$dir/podrunner( |\$)" || true) | sort -u | tr '\n' ' ')
  [ -n "${pids// /}" ] || return 0
  step "pod runner: stopping pid $pids(it stops the operator's containers with their grace period)..."
  # shellcheck disable=SC2086 # one pid per word
  kill -TERM $pids 2>/dev/null || true
  for _ in $(seq 120); do
    alive=false
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=true; done
    if ! $alive; then
      step "pod runner: stopped"
      return 0
    fi
    sleep 0.5
  done
  step "pod runner: still running after 60s; killing it"
  # shellcheck disable=SC2086 # one pid per word
  kill -KILL $pids 2>/dev/null || true
}

# pod_addrs lists the demo's pod IPs (10.245.x.x/32, dev-cluster.sh's pod
# CIDRs) on loopback in the network namespace, when it exists.
pod_addrs() {
  [ -e "/var/run/netns/$NETNS" ] || return 0
  in_ns ip -o -4 addr show dev lo | awk '$4 ~ /^10\.245\.[0-9]+\.[0-9]+\/32$/ {print $4}'
}

down() {
  local names pids addrs a left=""
  [ "$(id -u)" = 0 ] || { echo "demo-down: needs root (like make demo); run: sudo make demo-down" >&2; exit 1; }
  runner_down
  names=$("${podman[@]}" ps -a --format '{{.Names}}' --filter "name=^$prefix" 2>/dev/null || true)
  if [ -n "$names" ]; then
    step "containers: removing $(echo "$names" | tr '\n' ' ')"
    # shellcheck disable=SC2086 # one name per word
    "${podman[@]}" rm -f --ignore $names >/dev/null
  fi
  if [ -x "$K8S_BIN/kwokctl" ] && [ -d "$KWOK_WORKDIR/clusters/$cluster" ]; then
    step "cluster $cluster: deleting..."
    in_ns "$K8S_BIN/kwokctl" delete cluster --name "$cluster" --kubeconfig "$kubeconfig" >/dev/null 2>&1 || true
  fi
  rm -rf "$dir" "$kubeconfig"
  step "files: removed $dir and $kubeconfig"
  # The pod runner takes its pods' IPs off loopback when it stops them; one
  # that was killed leaves them.
  addrs=$(pod_addrs)
  if [ -n "$addrs" ]; then
    step "pod IPs: removing $(echo "$addrs" | tr '\n' ' ')from lo in $NETNS"
    for a in $addrs; do in_ns ip addr del "$a" dev lo || true; done
  fi
  # The network namespace is shared with make test, test-e2e, dev-cluster:
  # removed only when no process runs in it (netns.sh makes it again).
  if [ -e "/var/run/netns/$NETNS" ]; then
    pids=$(ip netns pids "$NETNS" | tr '\n' ' ')
    if [ -z "$pids" ]; then
      ip netns delete "$NETNS"
      step "network namespace $NETNS: removed (nothing else ran in it)"
    else
      step "network namespace $NETNS: kept, other processes run in it: $pids"
    fi
  fi
  # What must be gone now.
  pids=$(pgrep -f "$dir/" || true)
  [ -z "$pids" ] || left+="  processes: $pids"$'\n'
  names=$("${podman[@]}" ps -a --format '{{.Names}}' --filter "name=^$prefix" 2>/dev/null || true)
  [ -z "$names" ] || left+="  containers: $names"$'\n'
  if grep -q " $dir/" /proc/mounts; then left+="  mounts: $(grep " $dir/" /proc/mounts)"$'\n'; fi
  addrs=$(pod_addrs)
  [ -z "$addrs" ] || left+="  pod IPs on lo in $NETNS: $addrs"$'\n'
  [ -z "$left" ] || fail "left behind:"$'\n'"$left"
  step "demo removed: no pod runner, container, cluster process, mount, pod IP or file of the demo left"
}

case $cmd in
  preflight) preflight ;;
  up) up ;;
  status) status ;;
  down) down ;;
  *) echo "usage: demo.sh preflight|up|status|down" >&2; exit 2 ;;
esac
