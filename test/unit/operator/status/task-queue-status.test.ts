import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MetricDatum } from '../../../../src/core/telemetry/metrics-sink.ts';
import { TEMPORAL_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import { StatusRecorder } from '../../../../src/operator/status/status-recorder.ts';

const T0 = 1_700_000_000_000;

const gauge = (name: string, value: number, taskQueue = 'orders'): MetricDatum => ({
  name,
  unit: 'Count',
  value,
  dimensions: { TaskQueue: taskQueue },
});

/** One reading as the spillover loop records it (task-queue-loop.ts): known, then backlog (NaN when unknown), then workers. */
function reading(recorder: StatusRecorder, backlog: number | undefined, workersAlive: number, taskQueue = 'orders'): void {
  recorder.record(gauge(TEMPORAL_METRICS.backlogKnown.cloudwatch, backlog === undefined ? 0 : 1, taskQueue));
  recorder.record(gauge(TEMPORAL_METRICS.backlog.cloudwatch, backlog ?? NaN, taskQueue));
  recorder.record(gauge(TEMPORAL_METRICS.workersAlive.cloudwatch, workersAlive, taskQueue));
}

describe('the status snapshot of Temporal task queues', () => {
  const snapshot = (recorder: StatusRecorder) => recorder.snapshot('running', { version: '0', functions: [], startedAt: T0 }).taskQueues;

  it('shows the latest backlog and workers of each task queue', () => {
    const recorder = new StatusRecorder({ now: () => T0 });
    reading(recorder, 12, 2);
    reading(recorder, 0, 0, 'payments');
    assert.deepEqual(snapshot(recorder), [
      { name: 'orders', stats: 'known', backlog: 12, workersAlive: 2 },
      { name: 'payments', stats: 'known', backlog: 0, workersAlive: 0 },
    ]);
  });

  it('says unknown, with no backlog at all, while the server sends no statistics, and not the last known value', () => {
    const recorder = new StatusRecorder({ now: () => T0 });
    reading(recorder, 12, 1);
    reading(recorder, undefined, 1);
    assert.deepEqual(snapshot(recorder), [{ name: 'orders', stats: 'unknown', workersAlive: 1 }]);
    reading(recorder, 3, 1);
    assert.deepEqual(snapshot(recorder), [{ name: 'orders', stats: 'known', backlog: 3, workersAlive: 1 }]);
  });

  it('keeps task queues out of the SQS queues and leaves the list empty without spillover', () => {
    const recorder = new StatusRecorder({ now: () => T0 });
    assert.deepEqual(snapshot(recorder), []);
    reading(recorder, 5, 0);
    assert.deepEqual(recorder.queues(), []);
  });
});
