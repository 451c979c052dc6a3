#!/usr/bin/env bash
# `npm run check`: the inner loop, in well under a minute: typecheck, lint, format check, unit tests.
# scripts/test.sh stays the whole suite (with coverage, LocalStack, Temporal, Docker).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
wl_npm_ci
echo "== typecheck" && npm run --silent typecheck
echo "== lint" && npm run --silent lint
echo "== import rule" && npm run --silent deps
echo "== dependencies" && npx --no-install knip
echo "== format" && npm run --silent format:check
echo "== unit" && node --test --test-concurrency=8 --test-reporter=dot 'test/unit/**/*.test.ts'
