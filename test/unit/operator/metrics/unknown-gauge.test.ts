import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { CloudWatchMetrics } from '../../../../src/operator/metrics/cloudwatch.ts';
import type { PutMetricDataRequest } from '../../../../src/core/telemetry/metrics-publisher.ts';
import { TEMPORAL_METRICS } from '../../../../src/core/telemetry/metric-names.ts';
import { PrometheusMetrics } from '../../../../src/operator/metrics/prometheus.ts';

const backlog = (value: number) => ({
  name: TEMPORAL_METRICS.backlog.cloudwatch,
  unit: 'Count' as const,
  value,
  dimensions: { TaskQueue: 'orders' },
});

describe('a gauge recorded as NaN (unknown, not zero)', () => {
  it('drops the Prometheus series instead of keeping the last value or exposing NaN', async () => {
    const prometheus = new PrometheusMetrics();
    prometheus.record(backlog(7));
    assert.match((await prometheus.exposition()).body, /^workerless_temporal_backlog\{task_queue="orders"\} 7$/m);
    prometheus.record(backlog(NaN));
    const body = (await prometheus.exposition()).body;
    assert.doesNotMatch(body, /^workerless_temporal_backlog\{/m);
    assert.doesNotMatch(body, /NaN/);
    prometheus.record(backlog(2));
    assert.match((await prometheus.exposition()).body, /^workerless_temporal_backlog\{task_queue="orders"\} 2$/m);
  });

  it('sends CloudWatch no datum (PutMetricData refuses NaN)', async () => {
    const sent: PutMetricDataRequest[] = [];
    const cloudwatch = new CloudWatchMetrics(
      {
        putMetricData: async (request) => {
          sent.push(request);
        },
      },
      pino({ level: 'silent' }),
      { namespace: 'Test' },
    );
    cloudwatch.record(backlog(NaN));
    cloudwatch.record(backlog(4));
    await cloudwatch.flush();
    const data = sent.flatMap((r) => r.MetricData);
    assert.equal(data.length, 1);
    assert.deepEqual(data[0]?.StatisticValues, { SampleCount: 1, Sum: 4, Minimum: 4, Maximum: 4 });
  });
});
