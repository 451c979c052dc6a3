// Per-queue series or aggregated (--metrics-per-queue): /metrics stays bounded at 10,000 queues by default, and
// carries exactly each queue's series at 5. Also the policy's edges and the aggregated gauges' sums.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DispatchMetrics } from '../../../../src/core/telemetry/dispatch-metrics.ts';
import { PrometheusMetrics } from '../../../../src/operator/metrics/prometheus.ts';
import { PER_QUEUE_SERIES_MAX, QueueSeries, perQueueSeries, type MetricsPerQueue } from '../../../../src/operator/metrics/queue-series.ts';

/** What each queue of a busy route records: receives, an invocation, a failure, a throttle, settles, backlog. */
function traffic(metrics: DispatchMetrics, queue: string): void {
  metrics.polled(queue, 2);
  metrics.agesAtReceive(queue, [{ Attributes: { SentTimestamp: '1000' } }], 2000);
  metrics.invoked(queue, 2, 40);
  metrics.failedInvoke(queue, 1);
  metrics.throttled(queue, 'none');
  metrics.deleted(queue, 1);
  metrics.settled(queue, 2, 50);
  metrics.backlog(queue, { visible: 3, notVisible: 1, delayed: 0 });
}

/** The exposition's samples of workerless's own metrics (prom-client's process metrics left out). */
async function samples(prometheus: PrometheusMetrics): Promise<string[]> {
  const { body } = await prometheus.exposition();
  return body.split('\n').filter((line) => line.startsWith('workerless_') && !/^workerless_(process|nodejs)_/.test(line));
}

function routeOf(queues: number, mode: MetricsPerQueue): { prometheus: PrometheusMetrics; names: string[] } {
  const names = Array.from({ length: queues }, (_, i) => `tenant-${String(i).padStart(5, '0')}`);
  const prometheus = new PrometheusMetrics(new QueueSeries({ mode, queueCount: () => names.length }));
  const metrics = new DispatchMetrics(prometheus, 'fn', 10);
  for (const name of names) traffic(metrics, name);
  return { prometheus, names };
}

describe('metrics per queue: the policy', () => {
  it('auto keeps queues apart up to the bound and aggregates past it; on and off do what they say', () => {
    assert.equal(PER_QUEUE_SERIES_MAX, 200);
    assert.equal(perQueueSeries('auto', 0), true);
    assert.equal(perQueueSeries('auto', 200), true);
    assert.equal(perQueueSeries('auto', 201), false);
    assert.equal(perQueueSeries('on', 10_000), true);
    assert.equal(perQueueSeries('off', 1), false);
  });

  it('follows the current count: queues added past the bound aggregate, removed below it split again', () => {
    let count = 200;
    const series = new QueueSeries({ mode: 'auto', queueCount: () => count });
    const datum = { name: 'PolledEventCount', unit: 'Count' as const, value: 1, dimensions: { Function: 'f', Queue: 'q' } };
    assert.deepEqual(series.apply(datum).dimensions, { Function: 'f', Queue: 'q' });
    count = 201;
    assert.deepEqual(series.apply(datum).dimensions, { Function: 'f', Queue: '_aggregated' });
    count = 5;
    assert.deepEqual(series.apply(datum).dimensions, { Function: 'f', Queue: 'q' });
  });

  it('an aggregated gauge is the sum of every queue latest value, per function; unknown everywhere is NaN', () => {
    const series = new QueueSeries({ mode: 'off', queueCount: () => 3 });
    const gauge = (fn: string, queue: string, value: number) =>
      series.apply({ name: 'QueueMessagesVisible', unit: 'Count', value, dimensions: { Function: fn, Queue: queue } }).value;
    assert.equal(gauge('f', 'a', 5), 5);
    assert.equal(gauge('f', 'b', 7), 12);
    assert.equal(gauge('f', 'a', 1), 8, 'a replaces its own value');
    assert.equal(gauge('g', 'a', 100), 100, 'another function sums apart');
    assert.equal(gauge('f', 'b', Number.NaN), 1, 'an unknown queue leaves the sum');
    assert.ok(Number.isNaN(gauge('f', 'a', Number.NaN)), 'nothing known: absent, not zero');
    // Counters pass their own value.
    assert.equal(series.apply({ name: 'PolledEventCount', unit: 'Count', value: 3, dimensions: { Function: 'f', Queue: 'a' } }).value, 3);
  });
});

describe('metrics per queue: /metrics', () => {
  it('5 queues (the default, auto): exactly one series per queue and metric, named by queue', async () => {
    const { prometheus, names } = routeOf(5, 'auto');
    const lines = await samples(prometheus);
    const polled = lines.filter((l) => l.startsWith('workerless_polled_events_total{'));
    assert.deepEqual(polled.sort(), names.map((q) => `workerless_polled_events_total{function="fn",queue="${q}"} 2`).sort());
    const visible = lines.filter((l) => l.startsWith('workerless_queue_messages_visible{'));
    assert.equal(visible.length, 5);
    assert.ok(!lines.some((l) => l.includes('queue="_aggregated"')));
    // Per queue: 9 counter and gauge series with a queue label (throttles by reason too), 3 histograms of 15
    // buckets, +Inf, sum and count: 9 + 3 * 18 = 63; beside them the 3 function gauges.
    const perQueue = lines.filter((l) => l.includes(`queue="${names[0]}"`)).length;
    assert.equal(perQueue, 63);
    assert.equal(lines.length, 5 * 63 + 3);
  });

  it('10,000 queues (the default, auto): one aggregated series per metric, sums for gauges', async () => {
    const { prometheus } = routeOf(10_000, 'auto');
    const lines = await samples(prometheus);
    assert.equal(lines.length, 63 + 3, `bounded: ${lines.length} series`);
    assert.ok(lines.every((l) => !l.includes('queue="') || l.includes('queue="_aggregated"')));
    assert.ok(lines.includes('workerless_polled_events_total{function="fn",queue="_aggregated"} 20000'));
    assert.ok(lines.includes('workerless_queue_messages_visible{function="fn",queue="_aggregated"} 30000'));
    assert.ok(lines.includes('workerless_in_flight_messages{function="fn",queue="_aggregated"} 0'));
    const { body } = await prometheus.exposition();
    assert.ok(body.length < 64 * 1024, `exposition ${body.length} bytes`);
  });

  it('1,000 queues with --metrics-per-queue on: every queue its series (the operator asked for it)', async () => {
    const { prometheus } = routeOf(1_000, 'on');
    assert.equal((await samples(prometheus)).length, 1_000 * 63 + 3);
  });

  it('a switch drops the series of the mode left, so a scrape never shows both', async () => {
    let count = 2;
    const prometheus = new PrometheusMetrics(new QueueSeries({ mode: 'auto', queueCount: () => count }));
    const metrics = new DispatchMetrics(prometheus, 'fn', 10);
    metrics.deleted('a', 1);
    metrics.deleted('b', 1);
    assert.equal((await samples(prometheus)).filter((l) => l.startsWith('workerless_deleted_events_total')).length, 2);
    count = 300;
    assert.deepEqual(
      (await samples(prometheus)).filter((l) => l.startsWith('workerless_deleted_events_total')),
      [],
      'per-queue series gone at the switch',
    );
    metrics.deleted('c', 4);
    assert.deepEqual(
      (await samples(prometheus)).filter((l) => l.startsWith('workerless_deleted_events_total')),
      ['workerless_deleted_events_total{function="fn",queue="_aggregated"} 4'],
    );
  });
});

describe('metrics per queue: a queue that left its route (issue 42)', () => {
  it('per queue: its series go from /metrics once nothing of it is in flight, the others stay', async () => {
    const prometheus = new PrometheusMetrics(new QueueSeries({ mode: 'on', queueCount: () => 2 }));
    const metrics = new DispatchMetrics(prometheus, 'fn', 10);
    traffic(metrics, 'stays');
    traffic(metrics, 'leaves');
    metrics.polled('leaves', 1); // a batch of it still in flight when it leaves
    metrics.queueLeft('leaves');
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(
      (await samples(prometheus)).some((l) => l.includes('queue="leaves"')),
      'kept while a batch is in flight',
    );
    metrics.settled('leaves', 1, 10);
    await new Promise((resolve) => setImmediate(resolve));
    const after = await samples(prometheus);
    assert.deepEqual(
      after.filter((l) => l.includes('queue="leaves"')),
      [],
      'every series of the queue gone: counters, gauges, histograms',
    );
    assert.ok(after.some((l) => l.startsWith('workerless_deleted_events_total{function="fn",queue="stays"}')));
  });

  it('aggregated: its last backlog no longer counts in the sum (the review saw 7 messages of a deleted queue stay)', async () => {
    const prometheus = new PrometheusMetrics(new QueueSeries({ mode: 'off', queueCount: () => 2 }));
    const metrics = new DispatchMetrics(prometheus, 'fn', 10);
    metrics.backlog('stays', { visible: 3, notVisible: 0, delayed: 0 });
    metrics.backlog('deleted', { visible: 7, notVisible: 0, delayed: 0 });
    const visible = async () => (await samples(prometheus)).find((l) => l.startsWith('workerless_queue_messages_visible{'));
    assert.equal(await visible(), 'workerless_queue_messages_visible{function="fn",queue="_aggregated"} 10');
    metrics.queueLeft('deleted');
    assert.equal(await visible(), 'workerless_queue_messages_visible{function="fn",queue="_aggregated"} 3');
  });

  it('a queue of another function with the same name keeps its series', async () => {
    const prometheus = new PrometheusMetrics(new QueueSeries({ mode: 'on', queueCount: () => 1 }));
    const a = new DispatchMetrics(prometheus, 'a', 10);
    const b = new DispatchMetrics(prometheus, 'b', 10);
    traffic(a, 'shared-name');
    traffic(b, 'shared-name');
    a.queueLeft('shared-name');
    await new Promise((resolve) => setImmediate(resolve));
    const left = (await samples(prometheus)).filter((l) => l.includes('queue="shared-name"'));
    assert.ok(left.length > 0 && left.every((l) => l.includes('function="b"')), left.join('\n'));
  });
});
