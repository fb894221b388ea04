#!/usr/bin/env bash
# Scans the shipped binaries with govulncheck against the Go vulnerability
# database of a pinned day, offline, and fails on a vulnerable symbol that
# a binary links.
#
# Usage: hack/vulncheck.sh GOVULNCHECK VULNDB_VERSION BINARY...
#
# The database: golang.org/x/vulndb is a Go module, so the Go module proxy
# serves it like any other (no other vulnerability source is reachable
# where the project builds). Its data/osv folder holds one OSV file per
# entry, a form govulncheck reads from a local folder (-db file://...).
# VULNDB_VERSION (the Makefile) pins the day; CONTRIBUTING.md says how to
# move it.
#
# Binary mode (-mode binary) reads each binary's module versions and
# symbol table: what is linked is what can be called. It takes seconds; a
# source scan of the same four programs took 81 CPU seconds and 4.5 GiB.
#
# Before the real scan, a canary: the same entries plus one planted entry
# naming a function the manager calls (controller-runtime's manager.New,
# at every version). The scan of the manager against it must fail and name
# the planted entry, or a scan that cannot see a vulnerability (a wrong
# folder, a changed output, a binary without its symbol table) would pass.
set -euo pipefail

govulncheck=${1:?usage: vulncheck.sh GOVULNCHECK VULNDB_VERSION BINARY...}
version=${2:?usage: vulncheck.sh GOVULNCHECK VULNDB_VERSION BINARY...}
shift 2
[ $# -gt 0 ] || { echo "usage: vulncheck.sh GOVULNCHECK VULNDB_VERSION BINARY..." >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)

# Outside any module, so that the download neither reads nor writes go.mod.
dir=$(cd "$(mktemp -d)" && trap 'rmdir "$PWD"' EXIT && go mod download -json "golang.org/x/vulndb@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
db=$dir/data/osv
entries=$(find "$db" -maxdepth 1 -name '*.json' | wc -l)
[ "$entries" -gt 1000 ] || { echo "vulncheck: $db holds $entries entries; is golang.org/x/vulndb@$version the database?" >&2; exit 1; }

canary=$root/bin/vulndb-canary
rm -rf "$canary" && mkdir -p "$canary"
ln -s "$db"/*.json "$canary"/
planted=GO-9999-0001
cat >"$canary/$planted.json" <<EOF
{"schema_version":"1.3.1","id":"$planted","modified":"2026-01-01T00:00:00Z","published":"2026-01-01T00:00:00Z",
 "summary":"Planted by hack/vulncheck.sh: the scan must report it",
 "affected":[{"package":{"name":"sigs.k8s.io/controller-runtime","ecosystem":"Go"},
   "ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}],
   "ecosystem_specific":{"imports":[{"path":"sigs.k8s.io/controller-runtime/pkg/manager","symbols":["New"]}]}}],
 "database_specific":{"url":"https://pkg.go.dev/vuln/$planted"}}
EOF
manager=
for b in "$@"; do [ "$(basename "$b")" = manager ] && manager=$b; done
[ -n "$manager" ] || { echo "vulncheck: no manager among $*: the canary scans it" >&2; exit 2; }
set +e
out=$("$govulncheck" -mode binary -db "file://$canary" "$manager" 2>&1)
rc=$?
set -e
if [ $rc -ne 3 ] || ! grep -q "$planted" <<<"$out"; then
  echo "$out"
  echo "vulncheck: the canary was not reported (govulncheck exit $rc, want 3 naming $planted): this scan could not see a vulnerability" >&2
  exit 1
fi
rm -rf "$canary"

failed=0
for b in "$@"; do
  set +e
  out=$("$govulncheck" -mode binary -db "file://$db" "$b" 2>&1)
  rc=$?
  set -e
  case $rc in
    0) echo "vulncheck: $(basename "$b"): no vulnerable symbol linked ($entries entries of golang.org/x/vulndb@$version)" ;;
    3) echo "$out"
       echo "vulncheck: $(basename "$b") links the vulnerable symbols above: move the module (or the Go toolchain, GOTOOLCHAIN in the Makefile) to the version each entry says it is fixed in" >&2
       failed=1 ;;
    *) echo "$out"; echo "vulncheck: govulncheck failed on $b (exit $rc)" >&2; exit 1 ;;
  esac
done
[ $failed -eq 0 ] || exit 1
echo "vulncheck: the canary $planted was reported; $# binaries clean"
