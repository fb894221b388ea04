#!/usr/bin/env bash
# make test-k8s-matrix: make test on each Kubernetes version given, in
# turn, going on past a failing one. A line per version says passed or
# failed and how long it took (building that version's binaries
# included); each version's log is kept as bin/test-<version>.log.
#
# When the work tree was clean from start to end, the run is recorded: one
# JSON line appended to test/k8s-matrix/results.jsonl with the commit and
# its tree, the day, the machine, the command and every version's outcome
# and time. make release (hack/release.sh) reads that file: it cuts a
# release only from a commit whose code a recorded run passed on every
# version (hack/releasegate decides, with the other evidence a release
# needs). A run on a dirty tree tests code no commit names, so it is not
# recorded, and says so.
#
# Usage: hack/k8s-matrix.sh VERSION...   (make test-k8s-matrix passes
# KUBE_MATRIX_VERSIONS)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ $# -gt 0 ] || { echo "k8s-matrix: usage: hack/k8s-matrix.sh VERSION..." >&2; exit 2; }
results=test/k8s-matrix/results.jsonl

clean() { [ -z "$(git status --porcelain --untracked-files=no)" ]; }
commit=$(git rev-parse HEAD)
recordable=true
clean || recordable=false
start_all=$(date +%s)

failed=0 summary="" versions=""
for v in "$@"; do
  start=$(date +%s)
  rm -f bin/test.log
  if make --no-print-directory test KUBE_VERSION="$v"; then result=passed; else result=failed failed=1; fi
  [ -f bin/test.log ] && cp bin/test.log "bin/test-$v.log"
  seconds=$(($(date +%s) - start))
  line=$(printf 'test-k8s-matrix: %-9s %s in %ss' "$v" "$result" "$seconds")
  echo "$line"
  summary+="$line"$'\n'
  versions+="${versions:+,}{\"kubernetes\":\"$v\",\"result\":\"$result\",\"seconds\":$seconds}"
done
printf '%s' "$summary"

if $recordable && clean && [ "$(git rev-parse HEAD)" = "$commit" ]; then
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1 | sed 's/[\\"]//g')
  mem=$(awk '/^MemTotal:/ {printf "%d", $2 / 1048576 + 0.5}' /proc/meminfo)
  mkdir -p "$(dirname "$results")"
  printf '{"date":"%s","commit":"%s","tree":"%s","machine":{"cpu":"%s","cores":%s,"memoryGiB":%s},"command":"make test-k8s-matrix KUBE_MATRIX_VERSIONS=\\"%s\\"","seconds":%s,"versions":[%s]}\n' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$commit" "$(git rev-parse "$commit^{tree}")" "$cpu" "$(nproc)" "$mem" "$*" \
    "$(($(date +%s) - start_all))" "$versions" >>"$results"
  echo "test-k8s-matrix: recorded in $results (commit $commit); commit that file to let make release use it"
else
  echo "test-k8s-matrix: not recorded: the work tree had uncommitted changes to tracked files (or HEAD moved), so no commit names the code that ran"
fi
if [ "$failed" != 0 ]; then
  echo "test-k8s-matrix: a version failed (logs in bin/test-<version>.log)"
  exit 1
fi
