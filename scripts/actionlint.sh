#!/usr/bin/env bash
# actionlint, the GitHub Actions workflow checker, and the shellcheck it runs on every `run:` script:
#   scripts/actionlint.sh ensure   build actionlint with `go install` into $WORKERLESS_CACHE_DIR/bin (about 20 s
#                                  with a warm Go module cache), install Debian's shellcheck when it is missing;
#                                  prints actionlint's path
#   scripts/actionlint.sh path     where actionlint is (or will be)
#   scripts/actionlint.sh check    ensure, then check .github/workflows/*.yml (what test/deploy/workflows.test.ts runs)
# Without shellcheck on PATH actionlint silently skips the scripts, so ensure insists on it.
# Environment: WORKERLESS_CACHE_DIR (default ~/.cache/workerless), ACTIONLINT_VERSION.
set -euo pipefail
source "$(dirname "$0")/lib/go-tool.sh"

ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"

ensure_shellcheck() {
  command -v shellcheck >/dev/null && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "actionlint.sh: shellcheck is missing and installing it needs root" >&2; return 1; }
    sudo=(sudo -n)
  fi
  echo "actionlint.sh: installing Debian's shellcheck" >&2
  "${sudo[@]}" apt-get update >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends shellcheck >&2
  command -v shellcheck >/dev/null || { echo "actionlint.sh: apt-get installed shellcheck but it is not on PATH" >&2; return 1; }
}

ensure() {
  ensure_shellcheck
  GO_TOOL_HINT='about 20 s' go_tool_ensure actionlint github.com/rhysd/actionlint/cmd/actionlint "$ACTIONLINT_VERSION"
}

case "${1:-}" in
  ensure) ensure ;;
  path) echo "$GO_TOOL_BIN/actionlint" ;;
  check)
    tool="$(ensure)"
    cd "$(dirname "$0")/.."
    "$tool" -no-color
    ;;
  *) echo "usage: $0 ensure|path|check" >&2; exit 2 ;;
esac
