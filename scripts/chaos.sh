#!/usr/bin/env bash
# The manual chaos run: 20,000 messages (or the --messages given) through the freshly built daemon, with SQS
# 5xx bursts and hung calls, lost Invoke answers, throttles, function errors, SIGTERM and kill -9 restarts, and
# (with --adaptive-concurrency on and a per-queue maximum) a second queue whose visibility timeout is lowered
# mid-run while its visibility extensions fail long enough to lapse leases.
# Prints a summary and exits 1 if a message was lost, deleted before it succeeded, run twice at once (by the
# function's records or the Lambda endpoint's own count) or dead-lettered. Starts LocalStack if it is not running (and stops it again afterwards).
#   scripts/chaos.sh [--messages N] [--seed S] [--out DIR] [--concurrency N] [--batch-size N] [--reserved N]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh

started_localstack=0
cleanup() {
  if [ "$started_localstack" = 1 ]; then localstack/localstack.sh stop || true; fi
}
trap cleanup EXIT

npm run --silent build
if ! localstack/localstack.sh status >/dev/null 2>&1; then
  localstack/localstack.sh start
  started_localstack=1
fi
node test/chaos/chaos.ts --messages 20000 "$@"
