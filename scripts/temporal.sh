#!/usr/bin/env bash
# Temporal CLI for the spillover tests: `scripts/temporal.sh ensure` builds it once per machine and prints its path.
# The CLI carries a complete Temporal server (`temporal server start-dev`) that reports task-queue backlog stats.
# v1.5.1 is the last release that `go install` can build (v1.6+ needs replace directives) and it embeds server
# 1.29, above the 1.28 that workerless's spillover needs.
set -euo pipefail
source "$(dirname "$0")/lib/go-tool.sh"

TEMPORAL_CLI_VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"

case "${1:-}" in
  ensure) GO_TOOL_HINT='a few minutes' go_tool_ensure temporal github.com/temporalio/cli/cmd/temporal "$TEMPORAL_CLI_VERSION" ;;
  path) echo "$GO_TOOL_BIN/temporal" ;;
  *) echo "usage: $0 ensure|path" >&2; exit 2 ;;
esac
