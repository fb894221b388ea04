#!/usr/bin/env bash
# Installs nft and conntrack from Debian's packages when either is missing:
# the shard benchmarks stand in for a webhook Service with a NAT rule, as
# kube-proxy does, and forget the connections an earlier run's rule
# tracked (test/bench/webhooksvc.go); make test checks that rule.
set -euo pipefail
if command -v nft >/dev/null 2>&1 && command -v conntrack >/dev/null 2>&1; then exit 0; fi
echo "ensure-nat-tools: installing nftables and conntrack from Debian's packages..."
if [ "$(id -u)" != 0 ]; then echo "ensure-nat-tools: needs root (apt-get install nftables conntrack)" >&2; exit 1; fi
DEBIAN_FRONTEND=noninteractive apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nftables conntrack >/dev/null
nft --version
conntrack --version
