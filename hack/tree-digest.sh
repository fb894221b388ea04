#!/usr/bin/env bash
# Prints a digest of every file under the generated-code roots (committed or
# not), so that `make verify` can tell whether regeneration changed anything.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z --cached --others --exclude-standard -- apis config bundle bundle.Dockerfile charts internal/crdvalidation docs/RELIABILITY.md docs/configuration.md \
  docs/SECURITY.md docs/BENCHMARKS.md docs/bench \
  | xargs -0 -r sha256sum 2>/dev/null | sort -k2
