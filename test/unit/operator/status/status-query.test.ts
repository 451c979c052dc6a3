import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SQS_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import { MAX_STATUS_LIMIT, parseStatusQuery } from '../../../../src/operator/status/status-query.ts';
import { StatusRecorder } from '../../../../src/operator/status/status-recorder.ts';

const q = (search: string) => parseStatusQuery(new URLSearchParams(search));

describe('status query', () => {
  it('defaults to the 50 busiest; brings numbers into range; ignores what it does not know', () => {
    assert.deepEqual(q(''), { sort: 'busiest', offset: 0, limit: 50 });
    assert.deepEqual(q('sort=worst&offset=100&limit=20'), { sort: 'worst', offset: 100, limit: 20 });
    assert.deepEqual(q('sort=configured&limit=100000'), { sort: 'configured', offset: 0, limit: MAX_STATUS_LIMIT });
    assert.deepEqual(q('offset=-5&limit=0'), { sort: 'busiest', offset: 0, limit: 1 });
    assert.deepEqual(q('sort=name&offset=abc&limit=1e9'), { sort: 'busiest', offset: 0, limit: 50 });
  });

  it('the recorder pages and sorts every queue, and sums them all in the summary', () => {
    const recorder = new StatusRecorder({ queues: ['a', 'b', 'c', 'd'], now: () => 1_700_000_000_000 });
    const record = (name: string, queue: string, value: number) =>
      recorder.record({ name, unit: 'Count', value, dimensions: { Function: 'fn', Queue: queue } });
    record(SQS_METRICS.invoked.cloudwatch, 'b', 5);
    record(SQS_METRICS.invoked.cloudwatch, 'c', 9);
    record(SQS_METRICS.failedInvoke.cloudwatch, 'd', 2);
    record(SQS_METRICS.inFlight.cloudwatch, 'a', 3);
    const meta = { version: '0', functions: ['fn'], startedAt: 0 };
    const names = (search: string) => recorder.snapshot('running', meta, q(search)).queues.map((x) => x.name);
    assert.deepEqual(names(''), ['c', 'b', 'a', 'd'], 'most invoked, then most in flight, then configured');
    assert.deepEqual(names('sort=worst'), ['d', 'c', 'b', 'a']);
    assert.deepEqual(names('sort=configured&offset=1&limit=2'), ['b', 'c']);
    assert.deepEqual(names('offset=10'), []);
    const { summary, page } = recorder.snapshot('running', meta, q('limit=1'));
    assert.deepEqual(page, { sort: 'busiest', offset: 0, limit: 1 });
    assert.deepEqual(
      { queues: summary.queues, active: summary.active, failing: summary.failing, inFlight: summary.inFlight },
      { queues: 4, active: 4, failing: 1, inFlight: 3 },
    );
    assert.equal(summary.buckets.length, 60);
    assert.deepEqual(summary.buckets.at(-1), { t: 1_700_000_000_000, polled: 0, invoked: 14, failed: 2, throttled: 0, deleted: 0 });
  });
});
