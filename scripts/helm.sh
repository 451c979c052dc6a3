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
source "$(dirname "$0")/lib/pip-tool.sh"

# The newest Helm 3 release; it builds with the machine's Go (1.26) in about 2 minutes (it compiles client-go).
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
KUBERNETES_VALIDATE_VERSION="${KUBERNETES_VALIDATE_VERSION:-1.37.0}"
kv="$WORKERLESS_CACHE_DIR/kv-venv/bin/kubernetes-validate"

case "${1:-}" in
  ensure) GO_TOOL_HINT='about 2 minutes' go_tool_ensure helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
  ensure-kv) pip_tool_ensure kv-venv kubernetes-validate "$KUBERNETES_VALIDATE_VERSION" ;;
  path) echo "$GO_TOOL_BIN/helm" ;;
  kv-path) echo "$kv" ;;
  *) echo "usage: $0 ensure|ensure-kv|path|kv-path" >&2; exit 2 ;;
esac
