#!/usr/bin/env bash
# Sourced by the scripts that install a test tool from PyPI into a venv once per machine (helm.sh's
# kubernetes-validate, cfn-lint.sh). pip_tool_ensure VENV PACKAGE VERSION [EXECUTABLE] prints the path of
# $WORKERLESS_CACHE_DIR/VENV/bin/EXECUTABLE (default PACKAGE), creating the venv with $WORKERLESS_PYTHON (default
# python3) and installing PACKAGE==VERSION first unless the venv's stamp already says VERSION. pip's output goes to
# $WORKERLESS_CACHE_DIR/<VENV without -venv>-pip.log, whose tail is shown when the install fails.

WORKERLESS_CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"

pip_tool_ensure() {
  local venv="$WORKERLESS_CACHE_DIR/$1" package="$2" version="$3"
  local bin="$venv/bin/${4:-$2}" stamp="$venv/.workerless-$2" pip_log="$WORKERLESS_CACHE_DIR/${1%-venv}-pip.log"
  if [ -x "$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
    echo "$bin"
    return 0
  fi
  mkdir -p "$WORKERLESS_CACHE_DIR"
  if [ ! -x "$venv/bin/python" ]; then
    echo "creating $venv" >&2
    "${WORKERLESS_PYTHON:-python3}" -m venv "$venv"
  fi
  echo "installing $package==$version into $venv (log: $pip_log)" >&2
  if ! "$venv/bin/pip" install --disable-pip-version-check "$package==$version" >"$pip_log" 2>&1; then
    tail -n 30 "$pip_log" >&2
    echo "$package: pip install failed" >&2
    return 1
  fi
  echo "$version" >"$stamp"
  echo "$bin"
}
