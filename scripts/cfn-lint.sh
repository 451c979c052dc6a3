#!/usr/bin/env bash
# cfn-lint (AWS CloudFormation Linter) for the CDK construct's tests (cdk/test/cfn-lint.test.ts), from PyPI into a
# venv cached per machine; it validates templates offline against the resource specifications it ships.
#
#   scripts/cfn-lint.sh ensure   create the venv if needed; prints the path of its `cfn-lint` executable
#   scripts/cfn-lint.sh path     prints that path without installing
# Environment: WORKERLESS_CACHE_DIR (default ~/.cache/workerless), CFN_LINT_VERSION, WORKERLESS_PYTHON (interpreter
# for the venv, default python3).
set -euo pipefail

WORKERLESS_CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
CFN_LINT_VERSION="${CFN_LINT_VERSION:-1.58.0}"
venv="$WORKERLESS_CACHE_DIR/cfn-lint-venv"
bin="$venv/bin/cfn-lint"
stamp="$venv/.workerless-cfn-lint"

log() { echo "cfn-lint.sh: $*" >&2; }

ensure() {
  if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$CFN_LINT_VERSION" ]; then
    echo "$bin"
    return 0
  fi
  mkdir -p "$WORKERLESS_CACHE_DIR"
  if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    "${WORKERLESS_PYTHON:-python3}" -m venv "$venv"
  fi
  log "installing cfn-lint==$CFN_LINT_VERSION into $venv (log: $WORKERLESS_CACHE_DIR/cfn-lint-pip.log)"
  if ! "$venv/bin/pip" install --disable-pip-version-check "cfn-lint==$CFN_LINT_VERSION" \
      >"$WORKERLESS_CACHE_DIR/cfn-lint-pip.log" 2>&1; then
    tail -n 30 "$WORKERLESS_CACHE_DIR/cfn-lint-pip.log" >&2
    log "pip install failed"
    return 1
  fi
  echo "$CFN_LINT_VERSION" >"$stamp"
  echo "$bin"
}

case "${1:-}" in
  ensure) ensure ;;
  path) echo "$bin" ;;
  *) echo "usage: $0 ensure|path" >&2; exit 2 ;;
esac
