import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { CloudWatchMetrics } from '../../../../src/operator/metrics/cloudwatch.ts';
import type { PutMetricDataRequest } from '../../../../src/core/telemetry/metrics-publisher.ts';
import { DispatchMetrics } from '../../../../src/core/telemetry/dispatch-metrics.ts';

describe('CloudWatch dimension sets', () => {
  it('sends a throttle under Function+Queue (as before the reason) and under Function+Reason, never all three', async () => {
    const sent: PutMetricDataRequest[] = [];
    const cw = new CloudWatchMetrics({ putMetricData: (request) => Promise.resolve(void sent.push(request)) }, pino({ level: 'silent' }), {
      namespace: 'n',
    });
    const m = new DispatchMetrics(cw, 'fn', 4);
    m.throttled('q', 'ReservedFunctionConcurrentInvocationLimitExceeded');
    m.throttled('q', 'none');
    m.throttled('r', 'none');
    await cw.flush();
    const throttles = sent
      .flatMap((r) => r.MetricData)
      .filter((d) => d.MetricName === 'ThrottledInvokeCount')
      .map((d) => ({
        dims: Object.fromEntries((d.Dimensions ?? []).map((x): [string, string] => [x.Name ?? '', x.Value ?? ''])),
        sum: d.StatisticValues?.Sum,
      }));
    assert.deepEqual(
      throttles.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
      [
        { dims: { Function: 'fn', Queue: 'q' }, sum: 2 },
        { dims: { Function: 'fn', Queue: 'r' }, sum: 1 },
        { dims: { Function: 'fn', Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded' }, sum: 1 },
        { dims: { Function: 'fn', Reason: 'none' }, sum: 2 },
      ].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    );
  });
});
