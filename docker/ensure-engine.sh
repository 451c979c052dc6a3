#!/usr/bin/env bash
# Makes sure a Docker engine answers on this machine: installs Debian's docker.io (and debootstrap, which
# docker/build-base-image.sh needs) when missing, starts dockerd in the background when `docker info` fails,
# and waits until it answers. Safe to run again: a running engine is left alone.
set -euo pipefail

WORKERLESS_CACHE_DIR="${WORKERLESS_CACHE_DIR:-$HOME/.cache/workerless}"
mkdir -p "$WORKERLESS_CACHE_DIR"

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "ensure-engine: installing ${missing[*]}" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if docker info >/dev/null 2>&1; then
  exit 0
fi

# A dockerd that died (machine reset, OOM) leaves its pid file behind and a new one refuses to start.
if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid 2>/dev/null)" 2>/dev/null; then
  as_root rm -f /var/run/docker.pid
fi

log="$WORKERLESS_CACHE_DIR/dockerd.log"
echo "ensure-engine: starting dockerd (log: $log)" >&2
# setsid detaches the engine from this shell's process group, so it outlives the script and a CI step's
# cleanup of the group does not take it down mid-build.
as_root setsid dockerd >"$log" 2>&1 < /dev/null &

for _ in $(seq 1 120); do
  if docker info >/dev/null 2>&1; then
    echo "ensure-engine: engine ready ($(docker version --format '{{.Server.Version}}' 2>/dev/null))" >&2
    exit 0
  fi
  sleep 0.5
done
echo "ensure-engine: dockerd did not answer within 60 s; last lines of $log:" >&2
tail -n 30 "$log" >&2 || true
exit 1
