// workerless check: a queue with a failure destination needs a redrive policy or --max-attempts (issue 23).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatReport } from '../../../src/check/check.ts';
import { failureDestinationCovered } from '../../../src/check/failure-destination-check.ts';
import { QUEUE_CHECKS } from '../../../src/check/queue-checks.ts';
import { collectOptions } from '../../../src/config/cli.ts';
import { OPTIONS, resolveConfig } from '../../../src/config/config.ts';
import { type RouteConfig } from '../../../src/dispatch/route.ts';
import { queue } from '../../support/factories.ts';

const DEST = 'https://sqs.us-east-1.amazonaws.com/123456789012/failures';

function route(argv: string[]): RouteConfig {
  const env = { AWS_REGION: 'us-east-1' };
  const r = resolveConfig(collectOptions(['--metrics', 'off', '--function', 'fn', ...argv], env, OPTIONS).raw, env);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.config.routes[0]!;
}

/** The check's line for one queue, as the report prints it. */
function line(r: RouteConfig, maxReceiveCount?: number): string[] {
  const q = queue(r.queues.queues[0]!.ref, maxReceiveCount === undefined ? {} : { maxReceiveCount });
  const result = failureDestinationCovered({ route: r, queue: q, fn: undefined });
  return formatReport({ results: result ? [result] : [], notes: [] });
}

describe('workerless check: failure destination', () => {
  it('is one of the queue checks', () => {
    assert.ok(QUEUE_CHECKS.includes(failureDestinationCovered));
  });

  it('reports the receive a message leaves at, from the redrive policy or --max-attempts; FAIL with neither', () => {
    assert.deepEqual(line(route(['--queues', 'q', '--failure-destination', DEST]), 4), [
      `ok   queue q failure destination (${DEST}, after 4 receives (its maxReceiveCount); sqs:SendMessage not checked)`,
    ]);
    assert.deepEqual(line(route(['--queues', 'q', '--failure-destination', DEST])), [
      'FAIL queue q failure destination: has a failure destination but no redrive policy: give it a RedrivePolicy (maxReceiveCount) or set --max-attempts',
    ]);
    assert.deepEqual(line(route(['--queues', 'q', '--failure-destination', DEST, '--max-attempts', '3'])), [
      `ok   queue q failure destination (${DEST}, after 3 receives (--max-attempts); sqs:SendMessage not checked)`,
    ]);
  });

  it('nothing to report without a failure destination', () => {
    assert.deepEqual(line(route(['--queues', 'q'])), []);
  });
});
