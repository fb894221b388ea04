#!/usr/bin/env bash
# Checks the operator image: numeric non-root user 65532, and both binaries
# start (--help) with a read-only root filesystem, no network and the
# container limits that work on the project's machines.
set -euo pipefail
IMG=${IMG:?set IMG}
tool=${CONTAINER_TOOL:-podman}
run=("$tool")
if [ "$tool" = podman ]; then run+=(--cgroup-manager=cgroupfs --runtime /usr/sbin/runc); fi
user=$("${run[@]}" image inspect "$IMG" --format '{{.Config.User}}')
[ "$user" = "65532:65532" ] || { echo "test-image: image user is '$user', want 65532:65532" >&2; exit 1; }
for bin in /manager /bootstrap; do
  out=$("${run[@]}" run --rm --network none --read-only --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
    --entrypoint "$bin" "$IMG" --help 2>&1 || true)
  grep -q "^Usage of $bin" <<<"$out" || { echo "test-image: $bin --help failed:" >&2; echo "$out" >&2; exit 1; }
  echo "test-image: $bin --help runs as $user with a read-only root filesystem"
done
