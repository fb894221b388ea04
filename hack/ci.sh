#!/usr/bin/env bash
# make ci: runs each step (a make target) in turn and prints how long each
# took, at the end and when a step fails, so that every CI log says where
# its minutes went (CONTRIBUTING.md's test layers quote these times).
#
# Usage: MAKE=make hack/ci.sh STEP...
set -uo pipefail
make=${MAKE:-make}
start=$(date +%s)
times=()
report() {
  echo "ci: time per step (total $(($(date +%s) - start)) s):"
  printf '  %s\n' "${times[@]}"
}
for step in "$@"; do
  t0=$(date +%s)
  echo "ci: ===== $step"
  if ! $make --no-print-directory "$step"; then
    times+=("$step: FAILED after $(($(date +%s) - t0)) s")
    report
    exit 1
  fi
  times+=("$step: $(($(date +%s) - t0)) s")
done
report
