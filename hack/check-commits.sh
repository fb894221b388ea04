#!/usr/bin/env bash
# Fails when a commit subject is longer than 72 characters: git log
# --oneline should read like a changelog, with the numbers and reasons in
# the body. Only the commits from the one that added this script on are
# checked (older subjects are history). make verify runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

max=72
# The commit that added this script; without it (a shallow clone, or the
# script not committed yet) only HEAD is checked.
first=$(git log --diff-filter=A --format=%H -- hack/check-commits.sh 2>/dev/null | tail -1)
if [[ -n $first ]]; then
  range=("$first^..HEAD")
else
  range=(-1 HEAD)
fi
bad=$(git log --format='%h %s' "${range[@]}" | awk -v max="$max" '{s = substr($0, index($0, " ") + 1); if (length(s) > max) printf "  %s (%d characters)\n", $0, length(s)}')
if [[ -n $bad ]]; then
  echo "check-commits: commit subjects longer than $max characters (reword them, move the details into the body):"
  echo "$bad"
  exit 1
fi
