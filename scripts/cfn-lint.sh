#!/usr/bin/env bash
# cfn-lint (AWS CloudFormation Linter) for the CDK construct's tests (cdk/test/cfn-lint.test.ts), from PyPI into a
# venv cached per machine; it validates templates offline against the resource specifications it ships.
#
#   scripts/cfn-lint.sh ensure   create the venv if needed; prints the path of its `cfn-lint` executable
#   scripts/cfn-lint.sh path     prints that path without installing
# Environment: WORKERLESS_CACHE_DIR (default ~/.cache/workerless), CFN_LINT_VERSION, WORKERLESS_PYTHON (interpreter
# for the venv, default python3).
set -euo pipefail

source "$(dirname "$0")/lib/pip-tool.sh"

CFN_LINT_VERSION="${CFN_LINT_VERSION:-1.58.0}"

case "${1:-}" in
  ensure) pip_tool_ensure cfn-lint-venv cfn-lint "$CFN_LINT_VERSION" ;;
  path) echo "$WORKERLESS_CACHE_DIR/cfn-lint-venv/bin/cfn-lint" ;;
  *) echo "usage: $0 ensure|path" >&2; exit 2 ;;
esac
