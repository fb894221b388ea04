#!/usr/bin/env bash
# make uninstall: deletes every Drink, Guestbook and OperatorConfig in the
# cluster, waits until the garbage collector has deleted their operands
# (Drink ConfigMaps; Guestbook StatefulSets, Services, ConfigMaps and pods),
# then deletes the project's CRDs (config/crd). That is users' data, so it first prints
# what it would delete: how many objects of each kind, in which namespaces.
# It deletes only with CONFIRM=yes; without it, it deletes nothing and exits
# 1 with a message naming the flag. With no CRD installed there is nothing
# to delete and it exits 0.
#
# Usage: [KUBECTL="kubectl --kubeconfig FILE"] [CONFIRM=yes] hack/uninstall.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
read -r -a kc <<<"${KUBECTL:-kubectl}"
confirm=${CONFIRM:-}

# The CRDs config/crd ships that the cluster has (kubectl's warnings, if
# any, kept apart from the names).
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
if ! installed=$("${kc[@]}" get --ignore-not-found -k "$root/config/crd" -o name 2>"$errors"); then
  echo "uninstall: cannot read the CRDs: $(cat "$errors")" >&2
  exit 1
fi
if [ -z "$installed" ]; then
  echo "uninstall: none of the CRDs of config/crd is installed; nothing to delete."
  exit 0
fi

# tally RESOURCE KEY: how many objects of RESOURCE there are in all, then
# "count key" lines grouped by the jsonpath KEY (namespace, operand
# namespace or name; "(none yet)" when empty). Fails when the objects cannot
# be listed.
tally() {
  local list
  # One line per object, "=" first so that an empty key still makes a line.
  list=$("${kc[@]}" get "$1" --all-namespaces -o "jsonpath={range .items[*]}={$2}{\"\\n\"}{end}" 2>&1) || { echo "$list"; return 1; }
  list=$(grep '^=' <<<"$list" | sed 's/^=$/=(none yet)/; s/^=//') || true
  if [ -z "$list" ]; then echo 0; return; fi
  wc -l <<<"$list"
  sort <<<"$list" | uniq -c
}

# plural N WORD: "1 Drink", "3 Drinks".
plural() { if [ "$1" = 1 ]; then echo "$1 $2"; else echo "$1 $2s"; fi; }

counted=true
echo "uninstall: deleting the CRDs deletes every object of their kinds in the whole cluster:"
for crd in $installed; do
  crd=${crd#*/}
  case $crd in
    drinks.example.com) kind=Drink key=.metadata.namespace where="in namespace" ;;
    guestbooks.webapp.my.domain) kind=Guestbook key=.status.operandNamespace where="cluster-scoped, operands in namespace" ;;
    operatorconfigs.operator.example.com) kind=OperatorConfig key=.metadata.name where="cluster-scoped, named" ;;
    *) kind=$crd key=.metadata.name where="named" ;;
  esac
  if ! out=$(tally "$crd" "$key"); then
    echo "  $crd: cannot list: $out"
    counted=false
    continue
  fi
  total=$(head -n1 <<<"$out")
  groups=$(tail -n +2 <<<"$out")
  n=$(sed '/^$/d' <<<"$groups" | wc -l)
  if [ "$total" = 0 ]; then
    echo "  $(plural 0 "$kind") ($crd)"
    continue
  fi
  [ "$n" = 1 ] || where="${where/namespace/namespaces}"
  echo "  $(plural "$total" "$kind") ($crd), $where:"
  # uniq -c leaves "  N key"; a Guestbook not reconciled yet has no
  # operand namespace: "(none yet)".
  while read -r count name; do
    printf '      %5d  %s\n' "$count" "$name"
  done <<<"$groups"
done
echo "  and, through garbage collection, what the operator made for them: Drink ConfigMaps; Guestbook StatefulSets, Services, ConfigMaps and pods."

if deployed=$("${kc[@]}" get deployments --all-namespaces -l app.kubernetes.io/name=myoperator,control-plane=controller-manager -o name 2>/dev/null) && [ -n "$deployed" ]; then
  echo "uninstall: note: the operator is still deployed ($deployed); make undeploy removes it and keeps the CRDs."
fi

if [ "$confirm" != yes ]; then
  $counted || echo "uninstall: some objects could not be counted (above)." >&2
  echo "uninstall: nothing deleted. To delete the CRDs and every object above, run: make uninstall CONFIRM=yes" >&2
  exit 1
fi
$counted || echo "uninstall: CONFIRM=yes given although some objects could not be counted (above); deleting." >&2
# The custom resources go first, while their CRDs still exist: the garbage
# collector learns of each deletion through its watch of the kind, and
# that watch ends with the CRD; a deletion it had not heard of by then
# would leave the object in its graph, and the operands it owns, for good.
echo "uninstall: CONFIRM=yes: deleting every object of the CRDs' kinds first..."
for crd in $installed; do
  "${kc[@]}" delete "${crd#*/}" --all --all-namespaces --ignore-not-found --wait=true
done
# Then their operands, collected by the garbage collector: the ConfigMaps,
# StatefulSets and Services whose owner is one of those objects.
owned() {
  "${kc[@]}" get configmaps,statefulsets,services --all-namespaces \
    -o 'jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name} {.metadata.ownerReferences[*].apiVersion}{"\n"}{end}' |
    grep -E ' (.* )?(example\.com|operator\.example\.com|webapp\.my\.domain)/' | cut -d' ' -f1 || true
}
echo "uninstall: waiting for the garbage collector to delete their operands..."
left=$(owned)
for _ in $(seq 1 "${UNINSTALL_GC_WAIT:-120}"); do
  [ -z "$left" ] && break
  sleep 1
  left=$(owned)
done
if [ -n "$left" ]; then
  echo "uninstall: the garbage collector has not deleted these operands of the deleted objects; the CRDs are kept so that it still can:" >&2
  sed 's/^/  /' <<<"$left" >&2
  echo "uninstall: run make uninstall CONFIRM=yes again once it has (is kube-controller-manager running?)" >&2
  exit 1
fi
echo "uninstall: deleting the CRDs..."
"${kc[@]}" delete --ignore-not-found --wait=true -k "$root/config/crd"
echo "uninstall: done."
