#!/usr/bin/env bash
# Two SQS implementations that we did not write, for the conformance tests (test/integration/sqs-conformance.test.ts)
# beside LocalStack: ElasticMQ (Scala, from Maven Central) and moto in server mode (Python, from PyPI).
#   scripts/sqs-servers.sh ensure [SERVER...]   install once per machine (cached); prints nothing else on stdout
#   scripts/sqs-servers.sh start  [SERVER...]   install if needed, start detached, wait until it answers SQS calls
#   scripts/sqs-servers.sh stop   [SERVER...]   SIGTERM, wait, then SIGKILL; a no-op when not running
#   scripts/sqs-servers.sh status [SERVER...]   exit 0 when all run (prints pid and endpoint), 3 when one does not
# SERVER is elasticmq or moto; none means both. start and stop handle both at once.
# Environment: ELASTICMQ_PORT (default 9324), ELASTICMQ_HEAP (its -Xmx, default 256m), MOTO_PORT (default 5055), WORKERLESS_CACHE_DIR (default
# ~/.cache/workerless: ElasticMQ's jars and Maven repository, moto's virtualenv), WORKERLESS_PYTHON (interpreter
# for the venv, default python3), SQS_SERVERS_START_TIMEOUT_SEC (default 60).
# The tests find them at ELASTICMQ_ENDPOINT / MOTO_ENDPOINT (default http://127.0.0.1:<port>).
set -euo pipefail

PROJECT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEFS_DIR="$PROJECT_DIR/test/sqs-servers"
CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
START_TIMEOUT_SEC="${SQS_SERVERS_START_TIMEOUT_SEC:-60}"
ALL_SERVERS=(elasticmq moto)

log() { echo "sqs-servers.sh: $*" >&2; }

port_of() {
  case "$1" in
    elasticmq) echo "${ELASTICMQ_PORT:-9324}" ;;
    moto) echo "${MOTO_PORT:-5055}" ;;
  esac
}
# Another port gets its own pid and log, so instances can run side by side (as localstack.sh does).
state_dir() { echo "$PROJECT_DIR/.sqs-servers/$1-$(port_of "$1")"; }
# What identifies our process in /proc/PID/cmdline (guards against a reused pid).
cmdline_mark() {
  case "$1" in
    elasticmq) echo 'org.elasticmq.server.Main' ;;
    moto) echo 'moto_server' ;;
  esac
}

# The stamp next to an install is the hash of its definition file: a changed version reinstalls.
stamp_of() { sha256sum "$1" | cut -d' ' -f1; }

# ElasticMQ: the server's runtime classpath (39 jars), resolved by Maven from test/sqs-servers/elasticmq/pom.xml.
# The Maven repository lives in the cache too, so deleting the cache really starts from nothing. The jars are
# copied to a private directory and moved into place, so a cut-off never leaves a half-filled lib/.
ensure_elasticmq() {
  local pom="$DEFS_DIR/elasticmq/pom.xml" home="$CACHE_DIR/elasticmq" want tmp started
  want="$(stamp_of "$pom")"
  if [ -d "$home/lib" ] && [ "$(cat "$home/.workerless-pom" 2>/dev/null)" = "$want" ]; then return 0; fi
  command -v mvn >/dev/null || { log "Maven (mvn) is needed to install ElasticMQ"; exit 1; }
  command -v java >/dev/null || { log "Java 17 is needed to run ElasticMQ"; exit 1; }
  mkdir -p "$home"
  tmp="$(mktemp -d "$home/.lib.XXXXXX")"
  started="$(date +%s)"
  log "installing ElasticMQ's jars from Maven Central into $home (once per machine; log: $home/mvn.log)"
  if ! mvn -B -q -f "$pom" -Dmaven.repo.local="$CACHE_DIR/m2" dependency:copy-dependencies \
      -DoutputDirectory="$tmp" -DincludeScope=runtime >"$home/mvn.log" 2>&1; then
    tail -n 30 "$home/mvn.log" >&2
    rm -rf "$tmp"
    log "mvn dependency:copy-dependencies failed"
    exit 1
  fi
  rm -rf "$home/lib"
  mv "$tmp" "$home/lib"
  echo "$want" >"$home/.workerless-pom"
  log "ElasticMQ installed ($(find "$home/lib" -name '*.jar' | wc -l) jars) in $(( $(date +%s) - started )) s"
}

# moto: a virtualenv with moto[server], rebuilt in place when requirements.txt changes.
ensure_moto() {
  local req="$DEFS_DIR/moto/requirements.txt" venv="$CACHE_DIR/moto-venv" want started
  want="$(stamp_of "$req")"
  if [ -x "$venv/bin/moto_server" ] && [ "$(cat "$venv/.workerless-requirements" 2>/dev/null)" = "$want" ]; then return 0; fi
  mkdir -p "$CACHE_DIR"
  started="$(date +%s)"
  [ -x "$venv/bin/python" ] || "${WORKERLESS_PYTHON:-python3}" -m venv "$venv"
  log "installing $(grep -m1 '^moto' "$req") into $venv (once per machine; log: $CACHE_DIR/moto-pip.log)"
  if ! "$venv/bin/pip" install --disable-pip-version-check -r "$req" >"$CACHE_DIR/moto-pip.log" 2>&1; then
    tail -n 30 "$CACHE_DIR/moto-pip.log" >&2
    log "pip install failed"
    exit 1
  fi
  echo "$want" >"$venv/.workerless-requirements"
  log "moto installed in $(( $(date +%s) - started )) s"
}

running_pid() {
  local server="$1" pid_file pid
  pid_file="$(state_dir "$server")/pid"
  [ -f "$pid_file" ] || return 1
  pid="$(cat "$pid_file")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$(cmdline_mark "$server")" || return 1
  echo "$pid"
}

# Ready = it answers an SQS JSON-protocol ListQueues with 200 (neither checks signatures, so no signing here).
answers() {
  local code
  code="$(curl -sS -o /dev/null -w '%{http_code}' --max-time 2 -X POST "http://127.0.0.1:$(port_of "$1")/" \
    -H 'Content-Type: application/x-amz-json-1.0' -H 'X-Amz-Target: AmazonSQS.ListQueues' -d '{}' 2>/dev/null)" || return 1
  [ "$code" = 200 ]
}

launch() {
  local server="$1" port dir
  port="$(port_of "$server")"
  dir="$(state_dir "$server")"
  mkdir -p "$dir"
  # setsid: own session and process group, so the caller's Ctrl-C does not reach it and stop can signal the group.
  case "$server" in
    elasticmq)
      # -Xmx256m: a test server holds a few hundred messages of at most 1 MiB each. Thousands of queues need more
      # (10,000 idle ones, bench/many-queues.ts, ran one out of heap): ELASTICMQ_HEAP=1g, on a port of its own.
      setsid java -Dconfig.file="$DEFS_DIR/elasticmq/elasticmq.conf" -Dworkerless.elasticmq.port="$port" -Xmx"${ELASTICMQ_HEAP:-256m}" \
        -cp "$CACHE_DIR/elasticmq/lib/*" org.elasticmq.server.Main >"$dir/log" 2>&1 </dev/null &
      ;;
    moto)
      setsid "$CACHE_DIR/moto-venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$dir/log" 2>&1 </dev/null &
      ;;
  esac
  echo $! >"$dir/pid"
  log "$server: started pid $! on port $port (log: $dir/log)"
}

# Starts every named server first and then waits for all of them, so their start-ups overlap.
cmd_start() {
  local server pid waited ready started to_wait=()
  started="$(date +%s%N)"
  for server in "$@"; do
    if pid="$(running_pid "$server")"; then
      log "$server: already running (pid $pid) on port $(port_of "$server")"
    elif answers "$server"; then
      log "$server: a server not started by this script already answers on port $(port_of "$server"); using it"
      continue
    else
      "ensure_$server"
      launch "$server"
    fi
    to_wait+=("$server")
  done
  for server in "${to_wait[@]}"; do
    waited=0
    ready=0
    pid="$(cat "$(state_dir "$server")/pid")"
    while [ "$waited" -lt $((START_TIMEOUT_SEC * 4)) ]; do
      if answers "$server"; then ready=1; break; fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
      waited=$((waited + 1))
    done
    if [ "$ready" != 1 ]; then
      tail -n 40 "$(state_dir "$server")/log" >&2 || true
      log "$server: not answering on port $(port_of "$server") (log above); stopping what was started"
      cmd_stop "$@"
      exit 1
    fi
    log "$server: ready at http://127.0.0.1:$(port_of "$server") after $(( ($(date +%s%N) - started) / 1000000 )) ms"
  done
}

cmd_stop() {
  local server pid i
  for server in "$@"; do
    if ! pid="$(running_pid "$server")"; then
      rm -f "$(state_dir "$server")/pid"
      log "$server: not running"
      continue
    fi
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$server: pid $pid ignored SIGTERM for 10 s; sending SIGKILL"
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$(state_dir "$server")/pid"
    log "$server: stopped pid $pid"
  done
}

cmd_status() {
  local server pid status=0
  for server in "$@"; do
    if pid="$(running_pid "$server")" && answers "$server"; then
      echo "$server: running pid $pid at http://127.0.0.1:$(port_of "$server")"
    elif answers "$server"; then
      echo "$server: running (not started by this script) at http://127.0.0.1:$(port_of "$server")"
    else
      echo "$server: not running"
      status=3
    fi
  done
  return "$status"
}

command="${1:-}"
[ $# -gt 0 ] && shift
servers=("$@")
[ ${#servers[@]} -gt 0 ] || servers=("${ALL_SERVERS[@]}")
for server in "${servers[@]}"; do
  case "$server" in
    elasticmq | moto) ;;
    *) echo "unknown server '$server' (elasticmq or moto)" >&2; exit 2 ;;
  esac
done

case "$command" in
  ensure) for server in "${servers[@]}"; do "ensure_$server"; done ;;
  start) cmd_start "${servers[@]}" ;;
  stop) cmd_stop "${servers[@]}" ;;
  status) cmd_status "${servers[@]}" ;;
  *)
    echo "usage: $0 {ensure|start|stop|status} [elasticmq|moto]..." >&2
    exit 2
    ;;
esac
