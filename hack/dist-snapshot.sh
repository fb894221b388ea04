#!/usr/bin/env bash
# Keeps a copy of a freshly made dist/ for the same tree, so that make ci
# builds a release's files once: make test-dist saves the dist/ it made
# (before its make release-push rewrites it), and make
# test-e2e-install-ways restores it instead of running make dist again
# (about 30 s of image builds), when nothing in the tree has changed since.
#
#   hack/dist-snapshot.sh save VERSION     dist/ -> bin/dist-snapshot/
#   hack/dist-snapshot.sh restore VERSION  bin/dist-snapshot/ -> dist/, or
#                                          exit 1 when there is none for
#                                          this tree and VERSION
#
# The stamp names VERSION, HEAD and digests of the uncommitted changes and
# of the untracked files' contents: any edit makes the copy stale.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:?usage: dist-snapshot.sh save|restore VERSION}
version=${2:?usage: dist-snapshot.sh save|restore VERSION}
snapshot=bin/dist-snapshot
stamp() {
  echo "version $version"
  echo "head $(git rev-parse HEAD)"
  echo "changes $(git diff HEAD --binary | sha256sum | cut -d' ' -f1)"
  echo "untracked $(git ls-files -z --others --exclude-standard | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1)"
}
case $action in
save)
  rm -rf "$snapshot" "$snapshot.stamp"
  cp -a dist "$snapshot"
  stamp >"$snapshot.stamp"
  ;;
restore)
  [ -d "$snapshot" ] && [ -f "$snapshot.stamp" ] && [ "$(stamp)" = "$(cat "$snapshot.stamp")" ] || exit 1
  (cd "$snapshot" && sha256sum --quiet -c SHA256SUMS) || exit 1
  rm -rf dist
  cp -a "$snapshot" dist
  ;;
*)
  echo "dist-snapshot.sh: unknown action $action" >&2
  exit 2
  ;;
esac
