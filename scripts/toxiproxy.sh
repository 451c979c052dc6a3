#!/usr/bin/env bash
# Toxiproxy for the fault-injection tests: `scripts/toxiproxy.sh ensure` builds it once per machine and prints
# its path. Toxiproxy is a TCP proxy with an HTTP API that adds network faults (a connection that hangs, latency,
# resets, refused connections) between the daemon and LocalStack or the test Lambda endpoint.
# `go install` names the binary after its package directory (`server`); it is renamed to toxiproxy-server so it
# cannot be mistaken for anything else in the shared bin directory.
set -euo pipefail

WORKERLESS_CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
TOXIPROXY_VERSION="${TOXIPROXY_VERSION:-v2.12.0}"
bin_dir="$WORKERLESS_CACHE_DIR/bin"
server="$bin_dir/toxiproxy-server"
stamp="$bin_dir/toxiproxy-server.version"

ensure() {
  if [ -x "$server" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$TOXIPROXY_VERSION" ]; then
    echo "$server"
    return 0
  fi
  command -v go >/dev/null || { echo "toxiproxy.sh: Go is needed to build Toxiproxy" >&2; return 1; }
  mkdir -p "$bin_dir"
  echo "toxiproxy.sh: building toxiproxy-server $TOXIPROXY_VERSION into $bin_dir (about 30 s the first time)" >&2
  # A private GOBIN, so two builds at once (parallel CI jobs on one cache) never leave a half-written binary.
  local build_dir
  build_dir="$(mktemp -d "$bin_dir/.toxiproxy-build.XXXXXX")"
  trap 'rm -rf "$build_dir"' RETURN
  GOBIN="$build_dir" GOFLAGS="${GOFLAGS:--trimpath}" \
    go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" >&2
  mv -f "$build_dir/server" "$server"
  echo "$TOXIPROXY_VERSION" >"$stamp"
  echo "$server"
}

case "${1:-}" in
  ensure) ensure ;;
  path) echo "$server" ;;
  *) echo "usage: $0 ensure|path" >&2; exit 2 ;;
esac
