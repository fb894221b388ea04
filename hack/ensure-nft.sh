#!/usr/bin/env bash
# Installs nft from Debian's package nftables when it is missing: the shard
# benchmarks stand in for a webhook Service with a NAT rule, as kube-proxy
# does (test/bench/webhooksvc.go), and make test checks that rule.
set -euo pipefail
if command -v nft >/dev/null 2>&1; then exit 0; fi
echo "ensure-nft: installing nftables from Debian's packages..."
if [ "$(id -u)" != 0 ]; then echo "ensure-nft: needs root (apt-get install nftables)" >&2; exit 1; fi
DEBIAN_FRONTEND=noninteractive apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables >/dev/null
nft --version
