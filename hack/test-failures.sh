#!/usr/bin/env bash
# test-failures.sh LOG: prints, from the output of `go test ./...`, what
# failed: each "--- FAIL" with the test's own log lines under it, panics
# and the FAIL lines of packages. The output of a failing package holds
# the managers' logs too (hundreds of KB), and CI keeps only its end: this
# summary goes last, so the end says what failed.
set -euo pipefail
log=${1:?usage: test-failures.sh LOG}
echo "=== what failed (from $log) ==="
awk '
	/^[[:space:]]*--- FAIL/ { infail = 1; print; next }
	infail && /^    / { print; next }
	{ infail = 0 }
	/^panic:/ || /^FAIL/ || /test timed out after/ { print }
' "$log" | cut -c1-2000
