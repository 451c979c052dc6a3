#!/usr/bin/env bash
# `npm run demo`: installs what it needs, starts LocalStack (host mode) and the demo function, creates the
# demo queues, runs workerless against them and shows the dispatch order, then stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
wl_npm_ci   # npm ci, see scripts/ensure-node.sh
npm run --silent build
started=0
if ! localstack/localstack.sh status >/dev/null 2>&1; then
  localstack/localstack.sh start
  started=1
fi
trap '[ "$started" = 1 ] && localstack/localstack.sh stop' EXIT
localstack/localstack.sh seed >/dev/null
node scripts/demo.ts
