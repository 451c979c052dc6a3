#!/usr/bin/env bash
# Tools for the deploy phase (Helm chart and manifest checks), built or installed once per machine:
#   scripts/helm.sh ensure      build helm with `go install` into $WORKERLESS_CACHE_DIR/bin; prints its path
#   scripts/helm.sh ensure-kv   create a Python venv with kubernetes-validate (offline Kubernetes JSON schemas);
#                               prints the path of its `kubernetes-validate` executable
#   scripts/helm.sh path | kv-path
# Nothing is downloaded at test time: helm lint/template need no cluster, and kubernetes-validate ships its
# schemas inside the PyPI package (see ../shared/docs/TEST-INFRA.md, "Kubernetes manifests and charts").
# Environment: WORKERLESS_CACHE_DIR (default ~/.cache/workerless), HELM_VERSION, KUBERNETES_VALIDATE_VERSION,
# WORKERLESS_PYTHON (interpreter for the venv, default python3).
set -euo pipefail
source "$(dirname "$0")/lib/go-tool.sh"

# The newest Helm 3 release; it builds with the machine's Go (1.26) in about 2 minutes (it compiles client-go).
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
KUBERNETES_VALIDATE_VERSION="${KUBERNETES_VALIDATE_VERSION:-1.37.0}"
venv="$WORKERLESS_CACHE_DIR/kv-venv"
kv="$venv/bin/kubernetes-validate"
kv_stamp="$venv/.workerless-kubernetes-validate"

log() { echo "helm.sh: $*" >&2; }

ensure_kv() {
  if [ -x "$kv" ] && [ "$(cat "$kv_stamp" 2>/dev/null)" = "$KUBERNETES_VALIDATE_VERSION" ]; then
    echo "$kv"
    return 0
  fi
  mkdir -p "$WORKERLESS_CACHE_DIR"
  if [ ! -x "$venv/bin/python" ]; then
    log "creating $venv"
    "${WORKERLESS_PYTHON:-python3}" -m venv "$venv"
  fi
  log "installing kubernetes-validate==$KUBERNETES_VALIDATE_VERSION into $venv (log: $WORKERLESS_CACHE_DIR/kv-pip.log)"
  if ! "$venv/bin/pip" install --disable-pip-version-check "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" \
      >"$WORKERLESS_CACHE_DIR/kv-pip.log" 2>&1; then
    tail -n 30 "$WORKERLESS_CACHE_DIR/kv-pip.log" >&2
    log "pip install failed"
    return 1
  fi
  echo "$KUBERNETES_VALIDATE_VERSION" >"$kv_stamp"
  echo "$kv"
}

case "${1:-}" in
  ensure) GO_TOOL_HINT='about 2 minutes' go_tool_ensure helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
  ensure-kv) ensure_kv ;;
  path) echo "$GO_TOOL_BIN/helm" ;;
  kv-path) echo "$kv" ;;
  *) echo "usage: $0 ensure|ensure-kv|path|kv-path" >&2; exit 2 ;;
esac
