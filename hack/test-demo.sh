#!/usr/bin/env bash
# make test-demo: make demo prints the summary and exits 0, with config/default
# installed (webhooks and conversion through the Service, which the API
# server reaches at the pods' IPs), a second make demo reuses everything and
# rebuilds nothing and leaves a user's OperatorConfig edit in place (it
# applies config/samples again), the kubectl commands the summary prints work
# as printed, a rolling restart of the operator and a drain of the leader's
# node under load fail no request (the e2e suite's disruption features on
# the demo's install), and make demo-down leaves no process, container, mount, pod IP,
# cluster or file of the demo behind. Run as root from the repository.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
NETNS=${NETNS:-myoperator-test}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failures=0
check() { # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "test-demo: ok: $1"; else echo "test-demo: FAIL: $1" >&2; failures=$((failures + 1)); fi
}
has() { grep -qE -- "$2" "$1"; }
hasnt() { ! grep -qE -- "$2" "$1"; }

if [ -e bin/demo/podrunner.pid ] || [ -e bin/demo.kubeconfig ]; then
  echo "test-demo: a demo seems to be up (bin/demo); it would be taken down: run make demo-down first" >&2
  exit 1
fi

# The commands as README.md and docs/demo.md give them (their blocks marked
# demo): the first brings the demo up, the second takes it down.
mapfile -t readme < <(go run ./hack/docblocks -print README.md::demo)
mapfile -t demodoc < <(go run ./hack/docblocks -print docs/demo.md::demo)
[ "${#readme[@]}" = 2 ] && [ "${readme[*]}" = "${demodoc[*]}" ] || {
  echo "test-demo: README.md and docs/demo.md give different demo commands (${readme[*]} / ${demodoc[*]}), or not two" >&2
  exit 1
}
up=${readme[0]} down=${readme[1]}
echo "test-demo: the documents' commands: $up; $down"

t0=$SECONDS
eval "$up" >"$out/first" 2>&1 || { cat "$out/first"; echo "test-demo: FAIL: $up exited non-zero" >&2; eval "$down" || true; exit 1; }
first=$((SECONDS - t0))
echo "test-demo: make demo took ${first}s"
f=$out/first
# The summary: each Drink's ConfigMap in its version's layout (keys sorted by
# the template), the Guestbook with an active pod, the OperatorConfig.
check "v1alpha1 Drink: ConfigMap keys drink name" has "$f" '^  default +drink-sample-v1alpha1 +v1alpha1 +drink-sample-v1alpha1 +drink name $'
check "v1beta1 Drink: ConfigMap keys drink name size sugar" has "$f" '^  default +drink-sample-v1beta1 +v1beta1 +drink-sample-v1beta1 +drink name size sugar $'
check "v1 Drink: ConfigMap keys beverage displayName extras size sugarCubes" has "$f" '^  default +drink-sample-v1 +v1 +drink-sample-v1 +beverage displayName extras size sugarCubes $'
check "every Drink read through v1alpha1 (a v1 Drink too)" has "$f" '^  default +drink-sample-v1 +Evening cocoa +cocoa$'
check "the Guestbook with its active pod, Ready" has "$f" '^  guestbook-sample +3 +guestbook +guestbook-sample-[0-9] +.*True$'
check "one active guestbook pod" test "$(grep -cE '^  guestbook-sample-[0-9] .* active$' "$f")" = 1
check "OperatorConfig Available=True" has "$f" '^  Available +True '
check "two operator pods ready" test "$(grep -cE '^  myoperator-controller-manager-.* ready=true ' "$f")" = 2
check "the kubeconfig path" has "$f" "kubeconfig: $root/bin/demo.kubeconfig"
# The three kubectl commands, run exactly as printed.
grep -E '^  hack/netns.sh .* kubectl ' "$f" | sed 's/^  //' >"$out/commands"
check "three kubectl commands printed" test "$(wc -l <"$out/commands")" = 3
while read -r line; do
  # shellcheck disable=SC2086 # the printed command line, split as a shell would
  check "printed command works: $line" eval "$line >/dev/null"
done <"$out/commands"
pid=$(cat bin/demo/podrunner.pid)
podman --cgroup-manager=cgroupfs ps --format '{{.Names}} {{.Image}}' --filter name=^demo- >"$out/containers"
check "the operator's two manager containers run the demo's image" test "$(grep -cE '^demo-myoperator-controller-manager-.*-manager localhost/myoperator-demo:[0-9a-f]{16}$' "$out/containers")" = 2
pods=$(cut -d' ' -f1 bin/demo/pods.txt)
# The install is config/default: the API server calls the webhooks and the
# conversion through the Service, at its endpoints, which the pod runner
# serves at the pods' IPs (10.245/16, the demo nodes' pod CIDRs).
kc() { hack/netns.sh "$NETNS" kubectl --kubeconfig bin/demo.kubeconfig "$@"; }
svc=myoperator-webhook-service
check "validating webhooks call the Service" test "$(kc get validatingwebhookconfiguration myoperator-validating-webhook-configuration -o jsonpath='{.webhooks[*].clientConfig.service.name}')" = "$svc $svc $svc"
check "mutating webhooks call the Service" test "$(kc get mutatingwebhookconfiguration myoperator-mutating-webhook-configuration -o jsonpath='{.webhooks[*].clientConfig.service.name}')" = "$svc $svc"
check "no webhook calls a URL" test -z "$(kc get validatingwebhookconfigurations,mutatingwebhookconfigurations -o jsonpath='{.items[*].webhooks[*].clientConfig.url}')"
check "the Drink conversion calls the Service" test "$(kc get crd drinks.example.com -o jsonpath='{.spec.conversion.webhook.clientConfig.service.name}')" = "$svc"
# shellcheck disable=SC2016 # expanded by eval
check "the API server routes to endpoints (aggregator routing)" eval 'pgrep -af kube-apiserver | grep -F "$root/bin/demo/" | grep -q -- --enable-aggregator-routing=true'
kc -n myoperator-system get endpointslices -l kubernetes.io/service-name=$svc -o jsonpath='{range .items[*].endpoints[*]}{.addresses[0]} {.conditions.ready}{"\n"}{end}' >"$out/endpoints"
check "the Service's endpoints: two ready pod IPs in 10.245/16" test "$(grep -cE '^10\.245\.[0-9]+\.[0-9]+ true$' "$out/endpoints")" = 2
hack/netns.sh "$NETNS" ip -o -4 addr show dev lo >"$out/lo"
while read -r ip _; do
  check "pod IP $ip on lo in $NETNS" has "$out/lo" " inet ${ip//./\\.}/32 "
done <"$out/endpoints"

# A user's edit of the configuration, which the second make demo (it applies
# config/samples again) must leave as it is.
check "a user's edit: logLevel Error" eval 'kc patch operatorconfig cluster --type=merge -p "{\"spec\":{\"logLevel\":\"Error\"}}" >/dev/null'

t0=$SECONDS
eval "$up" >"$out/second" 2>&1 || { cat "$out/second"; echo "test-demo: FAIL: second $up exited non-zero" >&2; failures=$((failures + 1)); }
second=$((SECONDS - t0))
echo "test-demo: second make demo took ${second}s"
s=$out/second
check "second run: image reused" has "$s" 'image localhost/myoperator-demo:[0-9a-f]{16}: up to date .* reused$'
check "second run: cluster reused" has "$s" 'cluster myoperator-demo: running, reused'
check "second run: same pod runner" has "$s" "pod runner: running \\(pid $pid\\), reused"
check "second run: nothing built or created" hasnt "$s" 'building with podman|cluster .*: creating|restarting the operator'
check "second run: the same operator pods" test "$(cut -d' ' -f1 bin/demo/pods.txt)" = "$pods"
check "second run: the summary again" has "$s" '^  default +drink-sample-v1 +v1 +drink-sample-v1 +beverage displayName extras size sugarCubes $'
check "second run: the user's logLevel Error kept in spec" test "$(kc get operatorconfig cluster -o jsonpath='{.spec.logLevel}')" = Error
check "second run: logLevel Error in effect, from the user" test "$(kc get operatorconfig cluster -o jsonpath='{.status.effective.logLevel} {.status.effective.sources.logLevel}')" = "Error user"

# The disruptions a platform team causes every week, on the demo's install
# (config/default, aggregator routing, the pod runner terminating pods as a
# kubelet does): the e2e suite's features kubectl rollout restart of the
# operator and kubectl drain of the leader's node, each under a load that
# writes through every version and lists through v1alpha1 and never
# retries (e2e/disruption_test.go), run against the demo's cluster as an
# existing one. They restart the operator and drain a node, hence the
# destructive flag; they uncordon the node after.
t0=$SECONDS
check "e2e disruption features on the demo (rollout restart, drain of the leader's node): 0 failed requests" \
  "${MAKE:-make}" --no-print-directory -o build test-e2e NETNS="$NETNS" E2E_NAME=e2e-demo \
  E2E_KUBECONFIG="$root/bin/demo.kubeconfig" E2E_SKIP_INSTALL=1 E2E_ALLOW_DESTRUCTIVE=1 E2E_ARGS="--labels area=disruption"
echo "test-demo: the disruption features took $((SECONDS - t0))s (output in bin/e2e-demo.log)"

# The cluster's API server, to check after demo-down that it is gone.
server=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.server}')
t0=$SECONDS
eval "$down" >"$out/down" 2>&1 || { cat "$out/down"; echo "test-demo: FAIL: $down exited non-zero" >&2; failures=$((failures + 1)); }
echo "test-demo: make demo-down took $((SECONDS - t0))s"
# Checked here again, independently of what demo-down checks itself.
check "down: no process of the demo (pod runner, cluster)" test -z "$(pgrep -af "$root/bin/demo" || true)"
check "down: no demo container" test -z "$(podman --cgroup-manager=cgroupfs ps -a --format '{{.Names}}' --filter name=^demo- || true)"
check "down: no mount under bin/demo" hasnt /proc/mounts " $root/bin/demo"
# (kwokctl cannot say: its work directory under bin/demo is gone by now.)
# shellcheck disable=SC2016 # expanded by eval
check "down: the cluster's API server ($server) answers no more" eval '[ ! -e "/var/run/netns/$NETNS" ] || ! ip netns exec "$NETNS" curl -sk --max-time 2 -o /dev/null "$server/readyz"'
check "down: no files" test ! -e bin/demo -a ! -e bin/demo.kubeconfig
# shellcheck disable=SC2016 # expanded by eval
check "down: no pod IP (10.245/16) on lo in $NETNS" eval '[ ! -e "/var/run/netns/$NETNS" ] || ! ip -n "$NETNS" -o -4 addr show dev lo | grep -q " inet 10\.245\."'
# The network namespace is shared with other targets: removed when nothing
# else ran in it, kept (and said so) otherwise.
check "down: network namespace removed or kept for others" has "$out/down" "network namespace $NETNS: (removed|kept, other processes)"

if [ "$failures" -gt 0 ]; then
  echo "--- first make demo:"; cat "$out/first"
  echo "--- make demo-down:"; cat "$out/down"
  echo "test-demo: $failures checks failed" >&2
  exit 1
fi
echo "test-demo: all checks passed (make demo ${first}s, again ${second}s)"
