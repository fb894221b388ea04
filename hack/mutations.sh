#!/usr/bin/env bash
# Runs the mutation suite: each test/mutations/<name>.patch removes one fix
# from the product code; applied to a scratch copy of HEAD, the test its
# header names must fail, with the failure its header names. A mutation the
# test survives is a fix no test guards, and fails the suite; so does a
# patch that no longer applies or builds (the code it mutates moved: update
# the patch; make verify checks that each applies), and a failure other
# than the named one (a flaky test, or one failing for another reason,
# proves nothing about this fix).
#
# A patch starts with header lines git apply ignores:
#   Mutation: what it removes
#   Test: <package> <go test -run regexp>
#   Fails: <grep -E regexp> the failed test's output must match
#   Env: NAME=value ... (optional)
#   Why: why the test must fail without the fix
#
# Usage: hack/mutations.sh [name ...]   (default: every patch)
#        hack/mutations.sh --rotation K  (make ci: one K-th of the patches)
# --rotation K splits the patches into K groups of about equal time (by
# the times results.txt recorded; a patch without one counts as the
# median) and runs group (number of commits in HEAD's history) mod K: in
# any K consecutive commits every patch runs once. The count, not the
# tree's hash, chooses, because a hash only makes that likely. There the
# control run is left to make test, which make ci runs first on the same
# tree and which runs every named test as it is; only a patch with an
# Env: line, whose test make test runs otherwise, gets its control run.
# Each test first runs without its mutation and must pass: a test that
# fails in the scratch copy anyway proves nothing (CONTROL=0 skips that).
# A run of every patch writes test/mutations/results.txt: the commit, the
# machine, and each patch's outcome and time. UPDATE_RESULTS=1 with named
# patches replaces their lines there, with a header line saying when.
# Environment: NETNS_RUN, the command prefix that runs a command in the
# test network namespace (make passes hack/netns.sh <name>);
# KUBEBUILDER_ASSETS, the project-built API server.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS (make test-mutations does)}"
: "${NETNS_RUN:?set NETNS_RUN (make test-mutations does)}"
# A mutant's tests run the manager built from the mutant's tree, never a
# build of HEAD that make test names (test/framework/testenv/manager.go).
unset MYOPERATOR_TEST_MANAGER

rotation=
if [ "${1:-}" = --rotation ]; then
  rotation=${2:?--rotation K}
  shift 2
  [ "$rotation" -ge 1 ] 2>/dev/null || { echo "mutations: --rotation wants a number of groups, not '$rotation'" >&2; exit 2; }
fi

if [ -n "$rotation" ]; then
  commits=$(git rev-list --count HEAD)
  if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    echo "mutations: a shallow clone counts too few commits for the rotation; fetch the history (git fetch --unshallow)" >&2
    exit 2
  fi
  group=$((commits % rotation))
  # times prints "seconds patch" for each patch, from results.txt.
  times() {
    local p n
    for p in test/mutations/*.patch; do
      n=$(basename "$p" .patch)
      echo "$(sed -n "s/^caught  *$n by .* in \([0-9][0-9]*\)s: .*/\1/p" test/mutations/results.txt 2>/dev/null | head -1) $p"
    done
  }
  # The median of the recorded times stands for a patch without one.
  median=$(times | awk 'NF == 2 { print $1 }' | sort -n | awk '{ t[NR] = $1 } END { print NR ? t[int((NR + 1) / 2)] : 60 }')
  # Longest first (then by name, so every run splits alike), each into
  # the group with the least time so far.
  mapfile -t patches < <(times | awk -v m="$median" 'NF == 1 { print m, $1; next } { print }' |
    sort -k1,1nr -k2,2 | awk -v k="$rotation" -v g="$group" '
      { b = 0; for (q = 1; q < k; q++) if (load[q] < load[b]) b = q
        load[b] += $1; if (b == g) print $2 }')
  echo "mutations: rotation group $group of $rotation (commit $commits of the history): ${#patches[@]} of $(ls test/mutations/*.patch | wc -l) patches" >&2
elif [ $# -gt 0 ]; then
  patches=()
  for n in "$@"; do patches+=("test/mutations/${n%.patch}.patch"); done
else
  patches=(test/mutations/*.patch)
fi

work=$(mktemp -d /tmp/myoperator-mutations.XXXXXX)
tree=$work/tree
cleanup() {
  git worktree remove --force "$tree" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
git worktree add --quiet --detach "$tree" HEAD
base=$(git -C "$tree" rev-parse HEAD)
# The built tools and Kubernetes binaries (bin/, untracked) as the tests
# find them in the real tree, so a mutant fails for its mutation, not for a
# missing binary.
[ -d "$root/bin" ] && ln -s "$root/bin" "$tree/bin"

# run_test PKG RUN ENV LOG builds PKG's tests in the scratch tree as it is
# and runs those RUN matches in the test network namespace; it returns 125
# when the package does not build (a test binary that panics exits 2).
run_test() {
  (cd "$tree" && go test -c -o "$work/t.test" "$1") >"$4" 2>&1 || return 125
  # shellcheck disable=SC2086 # NETNS_RUN and the Env line are word lists.
  (cd "$tree/$1" && $NETNS_RUN env GOPROXY=off GOFLAGS="${GOFLAGS:-} -mod=readonly" KUBEBUILDER_ASSETS="$KUBEBUILDER_ASSETS" $3 \
    "$work/t.test" -test.count=1 -test.timeout=20m -test.run "$2") >>"$4" 2>&1
}

header() { sed -n "s/^$1: //p;/^diff --git/q" "$2" | head -1; }

start=$(date +%s)
caught=0 failed=0
summary=()
for patch in "${patches[@]}"; do
  name=$(basename "$patch" .patch)
  read -r pkg run <<<"$(header Test "$patch")"
  env_line=$(header Env "$patch")
  fails=$(header Fails "$patch")
  if [ -z "$pkg" ] || [ -z "$run" ]; then
    summary+=("BROKEN    $name: no 'Test: <package> <regexp>' header"); failed=$((failed + 1)); continue
  fi
  if [ -z "$fails" ]; then
    summary+=("BROKEN    $name: no 'Fails: <regexp>' header naming the failure the mutant must cause"); failed=$((failed + 1)); continue
  fi
  git -C "$tree" reset --quiet --hard "$base" && git -C "$tree" clean -qfd -e bin
  t0=$(date +%s)
  log=$work/$name.log
  control=${CONTROL:-1}
  [ -n "$rotation" ] && [ -z "${CONTROL:-}" ] && { [ -n "$env_line" ] && control=1 || control=0; }
  if [ "$control" = 1 ] && ! run_test "$pkg" "$run" "$env_line" "$log.control"; then
    summary+=("CONTROL   $name: $pkg $run fails without the mutation: $(grep -m1 -- '--- FAIL' "$log.control")"); failed=$((failed + 1)); continue
  fi
  if ! git -C "$tree" apply "$root/$patch" 2>"$log"; then
    summary+=("BROKEN    $name: the patch does not apply to HEAD: $(head -1 "$log")"); failed=$((failed + 1)); continue
  fi
  # Committed in the scratch tree: a test that clones the repository
  # (TestMakeRelease) sees HEAD, not the work tree.
  git -C "$tree" -c user.name=mutations -c user.email=mutations@localhost commit --quiet --no-verify -am "mutant $name"
  # Only the named test's package is compiled (outside the namespace, as
  # modules may need the proxy), not go build ./...: that cost 24 CPU
  # seconds a mutant, five times the test binary, and a mutation that
  # the test's package does not import cannot be caught by its test anyway.
  set +e
  run_test "$pkg" "$run" "$env_line" "$log"
  rc=$?
  set -e
  if [ $rc -eq 125 ]; then
    summary+=("BROKEN    $name: the mutant does not build: $(grep -m1 . "$log")"); failed=$((failed + 1)); continue
  fi
  if grep -q 'no tests to run' "$log"; then
    # A test that moved or was renamed: passing here would read as a
    # survivor, failing as nothing.
    summary+=("BROKEN    $name: 'Test: $pkg $run' matches no test"); failed=$((failed + 1)); continue
  fi
  took=$(($(date +%s) - t0))
  echo "mutations: $name done in ${took}s" >&2
  # The failure: the last line a test printed (a failed test's log comes
  # after its "--- FAIL" line, and its error usually last; the lines
  # before are its own logging).
  why=$(grep -E '^[[:space:]]+[^[:space:]]+_test\.go:[0-9]+:' "$log" | tail -1 | sed 's/^[[:space:]]*//' | cut -c1-160)
  if [ $rc -ne 0 ] && grep -q -- '--- FAIL' "$log" && grep -qE -- "$fails" "$log"; then
    caught=$((caught + 1))
    summary+=("caught    $name by $pkg $run in ${took}s: $why")
  elif [ $rc -ne 0 ] && grep -q -- '--- FAIL' "$log"; then
    failed=$((failed + 1))
    summary+=("OTHER     $name: $pkg $run failed, but not with /$fails/: $why")
  elif [ $rc -ne 0 ]; then
    failed=$((failed + 1))
    summary+=("ERROR     $name: $pkg $run exited $rc without a failing test (see below)")
    tail -20 "$log" | sed "s/^/  $name: /"
  else
    failed=$((failed + 1))
    summary+=("SURVIVED  $name: $pkg $run passed with the fix removed ($(header Mutation "$patch"))")
  fi
done
echo "mutations: summary"
printf '%s\n' "${summary[@]}"
total="mutations: ${#patches[@]}, caught $caught, not caught $failed, in $(($(date +%s) - start)) s"
echo "$total"
if [ $# -gt 0 ] && [ "${UPDATE_RESULTS:-0}" = 1 ] && [ -f test/mutations/results.txt ]; then
  # A patch mended after a full run, run again: its line of results.txt
  # is replaced and a header line says when and at which commit, so that
  # the file still holds one line per patch, each dated.
  printf '%s\n' "${summary[@]}" >"$work/summary"
  python3 - test/mutations/results.txt "$base" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$work/summary" <<'PY'
import sys
path, commit, when, summary = sys.argv[1:]
name = lambda l: l.split()[1].rstrip(":")
new = {name(l): l for l in open(summary).read().splitlines() if l.strip()}
ran = sorted(new)
lines = open(path).read().splitlines()
head = [l for l in lines if l.startswith("#")]
rows = [new.pop(name(l), l) for l in lines if not l.startswith(("#", "mutations:"))] + list(new.values())
rows.sort(key=name)
head.append(f"# run again at commit {commit}, {when}: {', '.join(ran)}")
caught = sum(1 for l in rows if l.startswith("caught"))
open(path, "w").write("\n".join(head + rows + [f"mutations: {len(rows)}, caught {caught}, not caught {len(rows) - caught}"]) + "\n")
PY
  echo "mutations: updated test/mutations/results.txt for $*"
fi
if [ $# -eq 0 ] && [ -z "$rotation" ]; then
  # Asked before the redirect below truncates results.txt, and without
  # it: asked inside, the truncated file itself was the uncommitted change,
  # so every full run was marked as made with uncommitted changes, which
  # make release does not count (hack/releasegate).
  dirty=$(git status --porcelain --untracked-files=no -- . ':!test/mutations/results.txt')
  {
    echo "# make test-mutations (hack/mutations.sh, every patch; control runs without the mutation: $( [ "${CONTROL:-1}" = 1 ] && echo on || echo off))"
    echo "# commit $base$( [ -z "$dirty" ] || echo ' (with uncommitted changes)'), $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(go env GOVERSION)"
    printf '%s\n' "${summary[@]}"
    echo "$total"
  } >test/mutations/results.txt
  echo "mutations: wrote test/mutations/results.txt"
fi
[ "$failed" -eq 0 ]
