#!/usr/bin/env bash
# Installs podman and runc from Debian's packages when podman is missing
# (no Docker engine runs on the project's machines).
set -euo pipefail
if command -v podman >/dev/null 2>&1 && [ -x /usr/sbin/runc ]; then exit 0; fi
echo "ensure-podman: installing podman and runc from Debian's packages..."
if [ "$(id -u)" != 0 ]; then echo "ensure-podman: needs root (apt-get install podman runc)" >&2; exit 1; fi
DEBIAN_FRONTEND=noninteractive apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc >/dev/null
podman --version
