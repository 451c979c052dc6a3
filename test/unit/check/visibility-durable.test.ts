// workerless check: the visibility timeout is compared with the function's timeout, except on an async durable
// route, whose messages are settled once Lambda accepted the start (docs/targets.md#durable-functions).
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { formatReport } from '../../../src/check/check.ts';
import type { FunctionConfiguration } from '../../../src/check/function-fit.ts';
import { QUEUE_CHECKS } from '../../../src/check/queue-checks.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { queue } from '../../support/factories.ts';

const FN: FunctionConfiguration = {
  version: '$LATEST',
  timeoutSec: 900,
  codeSha256: undefined,
  managedInstances: undefined,
  tenantIsolationMode: undefined,
  durable: { executionTimeoutSec: undefined },
};

function lines(argv: string[]): string[] {
  const env = { AWS_REGION: 'us-east-1' };
  const r = resolveConfig(collectOptions(['--metrics', 'off', '--function', 'fn', '--queues', 'q', ...argv], env, OPTIONS).raw, env);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  const route = r.config.routes[0]!;
  const q = { ...queue(route.queues.queues[0]!.ref), visibilityTimeoutSec: 30 };
  const results = QUEUE_CHECKS.map((check) => check({ route, queue: q, fn: FN })).filter((x) => x !== undefined);
  return formatReport({ results, notes: [] });
}

it('a 30 s visibility timeout fails against a 900 s function, except on an async durable route', () => {
  assert.match(lines([]).join('\n'), /^FAIL queue q visibility: 30 s is shorter than function fn's timeout of 900 s/);
  assert.match(lines(['--durable', 'sync']).join('\n'), /^FAIL queue q visibility/);
  assert.deepEqual(lines(['--durable', 'async']), ['ok   queue q visibility (--durable async: covers only the start, not the execution)']);
});
