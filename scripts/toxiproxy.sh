#!/usr/bin/env bash
# Toxiproxy for the fault-injection tests: `scripts/toxiproxy.sh ensure` builds it once per machine and prints
# its path. Toxiproxy is a TCP proxy with an HTTP API that adds network faults (a connection that hangs, latency,
# resets, refused connections) between the daemon and LocalStack or the test Lambda endpoint.
# `go install` names the binary after its package directory (`server`); it is renamed to toxiproxy-server so it
# cannot be mistaken for anything else in the shared bin directory.
set -euo pipefail
source "$(dirname "$0")/lib/go-tool.sh"

TOXIPROXY_VERSION="${TOXIPROXY_VERSION:-v2.12.0}"

case "${1:-}" in
  ensure) GO_TOOL_HINT='about 30 s' go_tool_ensure toxiproxy-server github.com/Shopify/toxiproxy/v2/cmd/server "$TOXIPROXY_VERSION" server ;;
  path) echo "$GO_TOOL_BIN/toxiproxy-server" ;;
  *) echo "usage: $0 ensure|path" >&2; exit 2 ;;
esac
