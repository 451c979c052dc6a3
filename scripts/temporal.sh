#!/usr/bin/env bash
# Temporal CLI for the spillover tests: `scripts/temporal.sh ensure` builds it once per machine and prints its path.
# The CLI carries a complete Temporal server (`temporal server start-dev`) that reports task-queue backlog stats.
# v1.5.1 is the last release that `go install` can build (v1.6+ needs replace directives) and it embeds server
# 1.29, above the 1.28 that workerless's spillover needs.
set -euo pipefail

WORKERLESS_CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
TEMPORAL_CLI_VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
bin_dir="$WORKERLESS_CACHE_DIR/bin"
cli="$bin_dir/temporal"
stamp="$bin_dir/temporal.version"

ensure() {
  if [ -x "$cli" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$TEMPORAL_CLI_VERSION" ]; then
    echo "$cli"
    return 0
  fi
  if [ -x "$cli" ] && [ ! -e "$stamp" ] && "$cli" --version 2>/dev/null | grep -q 'Server 1\.29'; then
    # Built before the stamp existed (same pinned version): adopt it instead of rebuilding for minutes.
    echo "$TEMPORAL_CLI_VERSION" >"$stamp"
    echo "$cli"
    return 0
  fi
  command -v go >/dev/null || { echo "temporal.sh: Go is needed to build the Temporal CLI" >&2; return 1; }
  mkdir -p "$bin_dir"
  echo "temporal.sh: building temporal CLI $TEMPORAL_CLI_VERSION into $bin_dir (a few minutes the first time)" >&2
  GOBIN="$bin_dir" GOFLAGS="${GOFLAGS:--trimpath}" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION" >&2
  echo "$TEMPORAL_CLI_VERSION" >"$stamp"
  echo "$cli"
}

case "${1:-}" in
  ensure) ensure ;;
  path) echo "$cli" ;;
  *) echo "usage: $0 ensure|path" >&2; exit 2 ;;
esac
