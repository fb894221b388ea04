#!/usr/bin/env bash
# Runs a command inside a network namespace with no route off this machine.
#
# Every API server a test or Make target starts, and everything that talks to
# it, runs in here: a cluster's API server dials webhook Services and cluster
# IPs on its own, and in this namespace such packets die on a veth pair whose
# both ends are inside. Loopback works as usual.
#
# Usage: hack/netns.sh NAME COMMAND [ARGS...]
set -euo pipefail
name=${1:?usage: netns.sh NAME COMMAND...}
shift

if [ "$(id -u)" != 0 ]; then
  echo "netns.sh: creating a network namespace needs root (run as root or with sudo)" >&2
  exit 1
fi

if [ ! -e "/var/run/netns/$name" ]; then
  ip netns add "$name"
  ip -n "$name" link set lo up
  # Both ends of the pair stay inside; the default route points at the peer
  # end, so kube-apiserver finds an advertise address and nothing leaves.
  ip -n "$name" link add v0 type veth peer name v1
  ip -n "$name" addr add 192.0.2.1/24 dev v0
  ip -n "$name" link set v0 up
  ip -n "$name" link set v1 up
  ip -n "$name" route add default via 192.0.2.2 dev v0
fi

exec nsenter --net="/var/run/netns/$name" -- "$@"
