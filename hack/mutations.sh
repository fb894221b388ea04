#!/usr/bin/env bash
# Runs the mutation suite: each test/mutations/<name>.patch removes one fix
# from the product code; applied to a scratch copy of HEAD, the test its
# header names must fail. A mutation the test survives is a fix no test
# guards, and fails the suite; so does a patch that no longer applies or
# builds (the code it mutates moved: update the patch).
#
# A patch starts with header lines git apply ignores:
#   Mutation: what it removes
#   Test: <package> <go test -run regexp>
#   Env: NAME=value ... (optional)
#   Why: why the test must fail without the fix
#
# Usage: hack/mutations.sh [name ...]   (default: every patch)
# CONTROL=1 first runs each test without its mutation, which must pass:
# a test that fails in the scratch copy anyway proves nothing.
# Environment: NETNS_RUN, the command prefix that runs a command in the
# test network namespace (make passes hack/netns.sh <name>);
# KUBEBUILDER_ASSETS, the project-built API server.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
: "${KUBEBUILDER_ASSETS:?set KUBEBUILDER_ASSETS (make test-mutations does)}"
: "${NETNS_RUN:?set NETNS_RUN (make test-mutations does)}"

if [ $# -gt 0 ]; then
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
# and runs those RUN matches in the test network namespace.
run_test() {
  (cd "$tree" && go test -c -o "$work/t.test" "$1") >"$4" 2>&1 || return 2
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
  if [ -z "$pkg" ] || [ -z "$run" ]; then
    summary+=("BROKEN    $name: no 'Test: <package> <regexp>' header"); failed=$((failed + 1)); continue
  fi
  git -C "$tree" reset --quiet --hard "$base" && git -C "$tree" clean -qfd -e bin
  t0=$(date +%s)
  log=$work/$name.log
  if [ "${CONTROL:-0}" = 1 ] && ! run_test "$pkg" "$run" "$env_line" "$log.control"; then
    summary+=("CONTROL   $name: $pkg $run fails without the mutation: $(grep -m1 -- '--- FAIL' "$log.control")"); failed=$((failed + 1)); continue
  fi
  if ! git -C "$tree" apply "$root/$patch" 2>"$log"; then
    summary+=("BROKEN    $name: the patch does not apply to HEAD: $(head -1 "$log")"); failed=$((failed + 1)); continue
  fi
  # Committed in the scratch tree: a test that clones the repository
  # (TestMakeRelease) sees HEAD, not the work tree.
  git -C "$tree" -c user.name=mutations -c user.email=mutations@localhost commit --quiet --no-verify -am "mutant $name"
  # Compile outside the namespace (modules may need the proxy); run inside.
  if ! (cd "$tree" && go build ./...) >"$log" 2>&1; then
    summary+=("BROKEN    $name: the mutant does not build: $(grep -m1 . "$log")"); failed=$((failed + 1)); continue
  fi
  set +e
  run_test "$pkg" "$run" "$env_line" "$log"
  rc=$?
  set -e
  took=$(($(date +%s) - t0))
  echo "mutations: $name done in ${took}s" >&2
  if [ $rc -ne 0 ] && grep -q -- '--- FAIL' "$log"; then
    caught=$((caught + 1))
    # The failure: the last line a test printed (a failed test's log
    # comes after its "--- FAIL" line, and its error usually last; the
    # lines before are its own logging).
    why=$(grep -E '^[[:space:]]+[^[:space:]]+_test\.go:[0-9]+:' "$log" | tail -1 | sed 's/^[[:space:]]*//' | cut -c1-160)
    summary+=("caught    $name by $pkg $run in ${took}s: $why")
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
echo "mutations: ${#patches[@]}, caught $caught, not caught $failed, in $(($(date +%s) - start)) s"
[ "$failed" -eq 0 ]
