#!/usr/bin/env bash
# Builds the workerless image from the Dockerfile on a machine without a container registry:
# starts the engine if needed, builds the local base image if missing, then `docker build` with the classic
# builder (Debian's engine has no buildx) on the host network (RUN steps reach npm and apt from there).
#
# Usage: docker/build-image.sh [extra docker build args...]
#   IMAGE  tag to produce (default workerless:test)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
IMAGE="${IMAGE:-workerless:test}"

"$here/ensure-engine.sh"
"$here/build-base-image.sh"
# The stand-in has the tag of the Dockerfile's base image but not its registry digest: build from the tag.
base="$(sed -n "s/^ARG NODE_IMAGE=//p" "$root/Dockerfile" | head -n 1)"
base="${NODE_IMAGE:-${base%%@*}}"

version="$(sed -n -E 's/^[[:space:]]*"version":[[:space:]]*"([^"]+)".*/\1/p' "$root/package.json" | head -n 1 || true)"
# The OCI labels' commit and time: the checkout's HEAD when there is one (as the release workflow passes them).
revision="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
created="$(git -C "$root" log -1 --format=%cI 2>/dev/null || echo unknown)"
start=$(date +%s)
DOCKER_BUILDKIT=0 docker build --network host --force-rm --build-arg "VERSION=${version:-unknown}" \
  --build-arg "REVISION=$revision" --build-arg "CREATED=$created" \
  --build-arg "NODE_IMAGE=$base" -t "$IMAGE" "$@" "$root"
echo "build-image: built $IMAGE in $(( $(date +%s) - start )) s;" \
  "size $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{ printf "%.1f MB", $1 / 1e6 }')" >&2
# The classic builder leaves each stage's result as an untagged image; recent ones are the next build's cache,
# older ones (from superseded builds) only take disk space on a long-lived CI machine.
docker image prune -f --filter until=24h >/dev/null || true
