#!/usr/bin/env bash
# Checks out the previous release's tree from git and builds its binaries
# with its own Makefile, for the e2e upgrade from that release.
#
# The previous release is the newest one in RELEASES.md whose commit's
# tree is not the tree of HEAD (right after `make release` records a
# release, HEAD differs from the release commit only by that record, and the
# upgrade is still from the recorded one). An argument vX.Y.Z names another
# release of RELEASES.md (the e2e upgrade also starts from the oldest
# release it supports, E2E_UPGRADE_FROM); PREVIOUS_RELEASE=vX.Y.Z@<sha>
# names any commit.
#
# It prints "VERSION COMMIT DIR" on its last line; DIR is a git worktree
# under bin/releases/ with bin/manager and bin/bootstrap built. Run it where
# the Go module proxy is reachable the first time (make test-e2e does,
# before it enters the network namespace); afterwards it builds offline.
#
# Usage: hack/previous-release.sh [vX.Y.Z]
set -euo pipefail
# The release as it was built: by the Go its tree asks for (its go.mod),
# else the machine's own, not by the toolchain this tree's Makefile pins
# for its own binaries (go1.27.3, for fixes of the standard library). v0.2.0
# was built with go1.26.8, whose HTTP/1.1 server still let its conversion
# webhook read a review while answering it; go1.27.3 does not (the fix is
# in internal/webhook/convert.go), so the upgrade would start from a build
# no user has.
export GOTOOLCHAIN=auto

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
fail() { printf 'previous-release: %s\n' "$*" >&2; exit 1; }
# The version names a folder this script removes and recreates, and both
# come from the environment or from RELEASES.md: nothing else than a
# release's name and a commit's hash gets that far.
check_release() {
  [[ $1 =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "release version '$1' is not vX.Y.Z"
  [[ $2 =~ ^[0-9a-f]{7,40}$ ]] || fail "release commit '$2' is not a commit hash"
}

want=${1:-}
[ -z "$want" ] || [[ $want =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "usage: hack/previous-release.sh [vX.Y.Z]: '$want' is not vX.Y.Z"
if [ -n "${PREVIOUS_RELEASE:-}" ]; then
  version=${PREVIOUS_RELEASE%@*}
  commit=${PREVIOUS_RELEASE#*@}
else
  [ -f RELEASES.md ] || fail "RELEASES.md, the release record, is missing"
  head_tree=$(git rev-parse 'HEAD^{tree}')
  version="" commit=""
  # Releases newest first: "## vX.Y.Z - date" followed by "Commit: <sha>".
  while read -r v c; do
    if ! git cat-file -e "$c^{commit}" 2>/dev/null; then
      if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
        fail "release $v was cut from commit $c, which this shallow clone does not have; the upgrade test builds that release from git: run git fetch --unshallow (or clone without --depth)"
      fi
      fail "release $v names commit $c, which is not in this repository (RELEASES.md is wrong, or the history was rewritten)"
    fi
    if [ -n "$want" ]; then
      [ "$v" = "$want" ] || continue
    elif [ "$(git rev-parse "$c^{tree}")" = "$head_tree" ]; then
      continue
    fi
    version=$v commit=$c
    break
  done < <(awk '/^## v[0-9]+\.[0-9]+\.[0-9]+/ { v = $2 } /^Commit: / { if (v != "") { print v, $2; v = "" } }' RELEASES.md)
  [ -n "$version" ] || [ -z "$want" ] || fail "RELEASES.md records no release $want"
  [ -n "$version" ] || fail "RELEASES.md records no release older than this tree"
fi
check_release "$version" "$commit"
commit=$(git rev-parse --verify --quiet "$commit^{commit}") || fail "release commit of $version is not in this repository"

dir="$root/bin/releases/$version"
# One run at a time: the e2e suite and the install ways run side by side
# in make ci, and each asks for the release; the second waits for the
# first's build and then finds it done.
mkdir -p "$root/bin/releases"
exec 9>"$root/bin/releases/.lock"
flock 9
# A build of exactly this commit, by this Go, is not made again: another
# suite may be putting its binaries into an image at this moment.
stamp="$commit $(go env GOVERSION)"
if [ "$(git -C "$dir" rev-parse HEAD 2>/dev/null || true)" != "$commit" ]; then
  git worktree remove --force "$dir" >/dev/null 2>&1 || rm -rf "$dir"
  git worktree prune
  mkdir -p "$root/bin/releases"
  git worktree add --detach --force "$dir" "$commit" >&2
fi
# A tree that someone edited is not the release.
[ -z "$(git -C "$dir" status --porcelain --untracked-files=no)" ] || fail "$dir has local changes; remove it (git worktree remove --force $dir)"

# The release's own build recipe, with the module cache of the current
# tree.
if [ "$(cat "$dir/bin/.previous-release-built" 2>/dev/null)" != "$stamp" ]; then
  rm -f "$dir/bin/.previous-release-built"
  make -C "$dir" --no-print-directory build >&2 || fail "make build of $version (commit $commit) failed; see above"
  echo "$stamp" >"$dir/bin/.previous-release-built"
fi
for b in manager bootstrap; do
  [ -x "$dir/bin/$b" ] || fail "make build of $version wrote no bin/$b"
done
echo "$version $commit $dir"
