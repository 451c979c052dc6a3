#!/usr/bin/env bash
# `npm run demo:temporal`: Temporal spillover in one command. Builds the Temporal CLI once per machine
# (scripts/temporal.sh), then scripts/demo-temporal.ts starts a dev server, the example worker function behind
# the test Lambda endpoint, a few workflows with no long-lived worker, and workerless with spillover; it logs
# the worker invocations and the workflows completing, then stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
wl_npm_ci   # npm ci, see scripts/ensure-node.sh
WORKERLESS_TEMPORAL_CLI="$(scripts/temporal.sh ensure)"
export WORKERLESS_TEMPORAL_CLI
node scripts/demo-temporal.ts
