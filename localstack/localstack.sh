#!/usr/bin/env bash
# LocalStack (SQS + CloudWatch) in host mode, without Docker, for the integration tests and the demo.
#   localstack/localstack.sh start    create the venv if needed, start detached, wait until healthy
#   localstack/localstack.sh stop     SIGTERM, wait, then SIGKILL; a no-op when not running
#   localstack/localstack.sh status   exit 0 when running (prints pid and endpoint), 3 when not
#   localstack/localstack.sh seed     create the demo queues (see seed-queues.sh)
# Environment: LOCALSTACK_PORT (default 4566), LOCALSTACK_SERVICES (default sqs,cloudwatch,sts,iam; add lambda for
# event source mappings: `workerless migrate`'s tests), WORKERLESS_CACHE_DIR (venv location, default ~/.cache/workerless),
# WORKERLESS_PYTHON (interpreter for the venv, default python3), LOCALSTACK_START_TIMEOUT_SEC (default 120).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PROJECT_DIR="$(cd "$SCRIPT_DIR/.." && pwd)"
CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
VENV="$CACHE_DIR/ls-venv"
REQUIREMENTS="$SCRIPT_DIR/requirements.txt"
PORT="${LOCALSTACK_PORT:-4566}"
SERVICES="${LOCALSTACK_SERVICES:-sqs,cloudwatch,sts,iam}"
# Another port gets its own state (pid, log, FILESYSTEM_ROOT), so instances can run side by side.
if [ "$PORT" = 4566 ]; then STATE_DIR="$PROJECT_DIR/.localstack"; else STATE_DIR="$PROJECT_DIR/.localstack/port-$PORT"; fi
PID_FILE="$STATE_DIR/localstack.pid"
LOG_FILE="$STATE_DIR/localstack.log"
ENDPOINT="http://127.0.0.1:$PORT"
START_TIMEOUT_SEC="${LOCALSTACK_START_TIMEOUT_SEC:-120}"

log() { echo "localstack.sh: $*" >&2; }

# The venv is rebuilt in place whenever requirements.txt changes (its hash is stored next to it).
ensure_venv() {
  local want have=""
  want="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
  [ -f "$VENV/.workerless-requirements" ] && have="$(cat "$VENV/.workerless-requirements")"
  if [ -x "$VENV/bin/python" ] && [ "$want" = "$have" ]; then
    return 0
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating $VENV"
    mkdir -p "$CACHE_DIR"
    "${WORKERLESS_PYTHON:-python3}" -m venv "$VENV"
  fi
  log "installing $(grep -m1 '^localstack' "$REQUIREMENTS") into $VENV (log: $CACHE_DIR/pip.log)"
  if ! "$VENV/bin/pip" install --disable-pip-version-check -r "$REQUIREMENTS" >"$CACHE_DIR/pip.log" 2>&1; then
    tail -n 30 "$CACHE_DIR/pip.log" >&2
    log "pip install failed"
    exit 1
  fi
  echo "$want" >"$VENV/.workerless-requirements"
}

# Our LocalStack process, if the pid file names a live LocalStack (guards against a reused pid).
running_pid() {
  local pid
  [ -f "$PID_FILE" ] || return 1
  pid="$(cat "$PID_FILE")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'localstack.runtime.main' || return 1
  echo "$pid"
}

# Healthy = the gateway answers and reports the services we need (SQS, CloudWatch, and lambda when it is in
# LOCALSTACK_SERVICES) as available or running.
healthy() {
  local body
  body="$(curl -fsS --max-time 2 "$ENDPOINT/_localstack/health" 2>/dev/null)" || return 1
  python3 -c '
import json, sys
s = json.loads(sys.argv[1]).get("services", {})
up = lambda n: s.get(n) in ("available", "running")
if not (up("sqs") and up("cloudwatch")): sys.exit(1)
# 2: running, but without the lambda that LOCALSTACK_SERVICES asks for (an instance started with other services).
sys.exit(2 if "lambda" in sys.argv[2].split(",") and not up("lambda") else 0)' "$body" "$SERVICES"
}

cmd_start() {
  local pid waited=0 started rc=0
  healthy || rc=$?
  if [ "$rc" = 2 ]; then
    log "a LocalStack without lambda answers at $ENDPOINT; stop it (localstack/localstack.sh stop) and start it again with LOCALSTACK_SERVICES=$SERVICES"
    exit 1
  fi
  if pid="$(running_pid)"; then
    if healthy; then
      log "already running (pid $pid) at $ENDPOINT"
      return 0
    fi
  elif healthy; then
    log "a LocalStack not started by this script already answers at $ENDPOINT; using it"
    return 0
  fi
  ensure_venv
  mkdir -p "$STATE_DIR"
  if [ -z "${pid:-}" ]; then
    started="$(date +%s%N)"
    # setsid: own session and process group, so the caller's Ctrl-C does not reach it and stop can signal
    # the whole group. DNS_ADDRESS=0 disables its DNS server (would want port 53); SKIP_SSL_CERT_DOWNLOAD
    # avoids a network fetch; DISABLE_EVENTS stops analytics calls; EAGER_SERVICE_LOADING makes the first
    # request of a test as fast as the rest. OVERRIDE_IN_DOCKER=0: these VMs have a /.dockerenv, which makes
    # LocalStack believe it is in its container and keep its state in /tmp/localstack - shared by every
    # instance on the machine and wiped when any of them stops - instead of under FILESYSTEM_ROOT.
    env SERVICES="$SERVICES" \
      OVERRIDE_IN_DOCKER=0 \
      GATEWAY_LISTEN="127.0.0.1:$PORT" \
      LOCALSTACK_HOST="localhost:$PORT" \
      SQS_ENDPOINT_STRATEGY=path \
      FILESYSTEM_ROOT="$STATE_DIR" \
      DNS_ADDRESS=0 \
      SKIP_SSL_CERT_DOWNLOAD=1 \
      DISABLE_EVENTS=1 \
      EAGER_SERVICE_LOADING=1 \
      PERSISTENCE=0 \
      setsid "$VENV/bin/python" -m localstack.runtime.main >"$LOG_FILE" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$PID_FILE"
    log "started pid $pid, waiting for $ENDPOINT/_localstack/health (log: $LOG_FILE)"
  else
    started="$(date +%s%N)"
    log "pid $pid is running but not healthy yet; waiting"
  fi
  while ! healthy; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 40 "$LOG_FILE" >&2 || true
      rm -f "$PID_FILE"
      log "LocalStack exited during start-up (log above)"
      exit 1
    fi
    if [ "$waited" -ge $((START_TIMEOUT_SEC * 4)) ]; then
      tail -n 40 "$LOG_FILE" >&2 || true
      log "not healthy after ${START_TIMEOUT_SEC}s; stopping it"
      cmd_stop
      exit 1
    fi
    sleep 0.25
    waited=$((waited + 1))
  done
  log "ready at $ENDPOINT after $(( ($(date +%s%N) - started) / 1000000 )) ms"
}

cmd_stop() {
  local pid i
  if ! pid="$(running_pid)"; then
    rm -f "$PID_FILE"
    log "not running"
    return 0
  fi
  # Negative pid = the process group made by setsid (LocalStack may have helper processes).
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 80); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "pid $pid ignored SIGTERM for 20 s; sending SIGKILL"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
  log "stopped pid $pid"
}

cmd_status() {
  local pid rc=0
  healthy || rc=$?
  if [ "$rc" = 2 ]; then
    echo "running without lambda at $ENDPOINT (LOCALSTACK_SERVICES asks for it)"
    return 3
  fi
  if pid="$(running_pid)" && healthy; then
    echo "running pid $pid at $ENDPOINT"
    return 0
  fi
  if healthy; then
    echo "running (not started by this script) at $ENDPOINT"
    return 0
  fi
  echo "not running"
  return 3
}

cmd_seed() {
  if ! healthy; then
    log "LocalStack is not reachable at $ENDPOINT; run localstack/localstack.sh start first"
    exit 1
  fi
  ensure_venv
  # shellcheck source=seed-queues.sh
  source "$SCRIPT_DIR/seed-queues.sh"
  (
    unset AWS_SESSION_TOKEN AWS_PROFILE
    export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_PAGER='' \
      AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
    workerless_seed_queues "$VENV/bin/aws" --endpoint-url "$ENDPOINT" --region us-east-1
  )
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  seed) cmd_seed ;;
  *)
    echo "usage: $0 {start|stop|status|seed}" >&2
    exit 2
    ;;
esac
