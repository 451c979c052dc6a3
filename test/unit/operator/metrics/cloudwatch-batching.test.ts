// PutMetricData's limits (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html):
// at most 1,000 metric data items and 1 MB per request. And the custom metrics a route creates: each distinct set
// of dimensions is one, billed by the month (https://aws.amazon.com/cloudwatch/pricing/), so 10,000 queues under
// the default --metrics-per-queue auto make as many as one queue does.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { DispatchMetrics } from '../../../../src/core/telemetry/dispatch-metrics.ts';
import { putMetricDataBody } from '../../../../src/aws/cloudwatch-http.ts';
import { CloudWatchMetrics } from '../../../../src/operator/metrics/cloudwatch.ts';
import type { PutMetricDataRequest } from '../../../../src/core/telemetry/metrics-publisher.ts';
import { QueueSeries, type MetricsPerQueue } from '../../../../src/operator/metrics/queue-series.ts';

const MB = 1_000_000;

function sinkOf(mode: MetricsPerQueue, queueCount: number, maxPendingDatums = 1_000_000) {
  const sent: PutMetricDataRequest[] = [];
  const cw = new CloudWatchMetrics({ putMetricData: (request) => Promise.resolve(void sent.push(request)) }, pino({ level: 'silent' }), {
    namespace: 'Workerless-test',
    maxPendingDatums,
    queueSeries: new QueueSeries({ mode, queueCount: () => queueCount }),
  });
  return { cw, sent };
}

function busy(metrics: DispatchMetrics, queue: string): void {
  metrics.polled(queue, 1);
  metrics.invoked(queue, 1, 30);
  metrics.deleted(queue, 1);
  metrics.settled(queue, 1, 40);
  metrics.backlog(queue, { visible: 2, notVisible: 0, delayed: 0 });
}

function assertWithinLimits(sent: readonly PutMetricDataRequest[]): void {
  for (const request of sent) {
    assert.ok(request.MetricData.length <= 1000, `${request.MetricData.length} items in one request`);
    const bytes = Buffer.byteLength(putMetricDataBody(request));
    assert.ok(bytes <= MB, `${bytes} bytes in one request`);
  }
}

const dimensionSets = (sent: readonly PutMetricDataRequest[]) =>
  new Set(sent.flatMap((r) => r.MetricData.map((d) => `${d.MetricName}:${JSON.stringify(d.Dimensions)}`)));

describe('CloudWatch at many queues', () => {
  it('10,000 queues, default auto: the datums of one queue, aggregated, with every event counted', async () => {
    const { cw, sent } = sinkOf('auto', 10_000);
    const metrics = new DispatchMetrics(cw, 'fn', 10);
    for (let i = 0; i < 10_000; i++) busy(metrics, `tenant-${i}`);
    await cw.flush();
    assertWithinLimits(sent);
    assert.equal(sent.length, 1);
    const sets = dimensionSets(sent);
    assert.ok(sets.size <= 15, `${sets.size} custom metrics`);
    const polled = sent[0]!.MetricData.find((d) => d.MetricName === 'PolledEventCount');
    assert.deepEqual(polled?.Dimensions, [
      { Name: 'Function', Value: 'fn' },
      { Name: 'Queue', Value: '_aggregated' },
    ]);
    assert.equal(polled?.StatisticValues?.Sum, 10_000);
    const visible = sent[0]!.MetricData.find((d) => d.MetricName === 'QueueMessagesVisible');
    assert.equal(visible?.StatisticValues?.Maximum, 20_000, 'the backlog of every queue, summed');
  });

  it('10,000 queues per queue (on): split into requests of at most 1,000 items and 1 MB, none lost', async () => {
    const { cw, sent } = sinkOf('on', 10_000);
    const metrics = new DispatchMetrics(cw, 'fn', 10);
    for (let i = 0; i < 10_000; i++) busy(metrics, `tenant-${i}`);
    await cw.flush();
    assertWithinLimits(sent);
    const items = sent.reduce((n, r) => n + r.MetricData.length, 0);
    // Per queue: polled, invoked, duration, deleted, settle time, in flight, three backlog gauges; plus 3 function gauges.
    assert.equal(items, 10_000 * 9 + 3);
    assert.equal(sent.length, Math.ceil(items / 1000));
  });

  it('long dimension values: the 1 MB bound splits requests before 1,000 items', async () => {
    const { cw, sent } = sinkOf('on', 2_000);
    // Queue names are at most 80 characters and function names 64, but a dimension value may hold 1,024.
    const fn = 'f'.repeat(1024);
    const metrics = new DispatchMetrics(cw, fn, 10);
    for (let i = 0; i < 2_000; i++) metrics.deleted(`${'q'.repeat(1000)}-${i}`, 1);
    await cw.flush();
    assertWithinLimits(sent);
    assert.ok(sent.length >= 3, `${sent.length} requests`);
    assert.ok(
      sent.some((r) => r.MetricData.length < 1000),
      'some request was cut by size',
    );
    assert.equal(
      sent.reduce((n, r) => n + r.MetricData.length, 0),
      2_000 + 3,
    );
  });
});
