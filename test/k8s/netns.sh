#!/usr/bin/env bash
# Runs a command (the k8s suites: `npm run test:k8s`) in a network namespace of its own, with only
# its loopback, brought up here. The test node's pod addresses (198.18.X.N), the ClusterIPs the
# suites route and every port they listen on live on that loopback and never touch the host's
# interfaces; nothing in there reaches a registry or any other host, so build.sh prepares what
# the suites need first, outside. Root, as the test node always needed (unshare, ip addr).
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: $0 command [args...]" >&2; exit 2; }
# SLIPWAY_K8S_NETNS names the namespace, for the suites' check that they run in it (netns-check.ts).
exec unshare --net -- bash -c \
  'ip link set lo up && SLIPWAY_K8S_NETNS=$(readlink /proc/self/ns/net) exec "$@"' netns "$@"
