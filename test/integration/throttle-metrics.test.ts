import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { GetMetricDataCommand, GetMetricStatisticsCommand } from '@aws-sdk/client-cloudwatch';
import { bodies, cloudWatchClient, countMessages, createQueue, createQueueWithDlq, sendMessages } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

describe('throttling and metrics against LocalStack', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: {
        // Reserved concurrency 1 while workerless runs 4 loops: most invokes are throttled.
        slow: { handler: functionFixture('slow.mjs'), reservedConcurrency: 1, env: { SLOW_MS: '150' } },
        record: { handler: functionFixture('record.mjs') },
        fail: { handler: functionFixture('fail.mjs') },
      },
    });
  });
  after(() => endpoint.stop());

  it('a throttled function loses no message and sends none to the DLQ', async () => {
    // maxReceiveCount 1: with AWS's trigger, a single throttled-then-redelivered message would land in the DLQ.
    const { queue: q, dlq } = await createQueueWithDlq('wl-throttle', 1, { VisibilityTimeout: '4' });
    const ids = await sendMessages(q.url, bodies(12, 'm'));
    const name = `it-${q.name}`;
    const daemon = startDaemon(endpoint.url, [
      ...['--function', 'slow', '--queues', q.name, '--concurrency', '4'],
      ...['--metrics', 'on', '--name', name, '--metrics-interval', '1'],
    ]);
    await started(daemon);
    await endpoint.waitFor(
      (inv) =>
        new Set(
          inv
            .filter((i) => i.status === 'success')
            .flatMap(eventRecords)
            .map((r) => r.messageId),
        ).size === 12,
      60_000,
    );
    assert.equal(await stopDaemon(daemon), 0);
    assert.ok(endpoint.rejected.filter((r) => r.statusCode === 429).length > 0, 'the function was really throttled');
    assert.equal(endpoint.peakConcurrency('slow'), 1);
    const succeeded = endpoint.invocations
      .filter((i) => i.status === 'success')
      .flatMap(eventRecords)
      .map((r) => r.messageId);
    assert.deepEqual([...new Set(succeeded)].sort(), [...ids].sort());
    assert.equal(succeeded.length, 12, 'each message processed exactly once');
    assert.equal(await countMessages(q.url), 0);
    assert.equal(await countMessages(dlq.url), 0, 'throttling sent nothing to the DLQ');
    assert.ok(daemon.logs().some((l) => l['msg'] === 'function throttled, retrying'));
    // The reason Lambda gave (Reason of TooManyRequestsException), so a concurrency limit is told from a CPU limit.
    const reasons = new Set(
      daemon
        .logs()
        .filter((l) => l['msg'] === 'function throttled, retrying')
        .map((l) => l['reason']),
    );
    assert.deepEqual([...reasons], ['ReservedFunctionConcurrentInvocationLimitExceeded']);
    // CloudWatch counts each throttle under Function+Queue, as before, and under Function+Reason, a bounded label.
    const throttles = endpoint.rejected.filter((r) => r.functionName === 'slow' && r.statusCode === 429).length;
    const sum = async (dimensions: Record<string, string>) => {
      const out = await cloudWatchClient().send(
        new GetMetricStatisticsCommand({
          Namespace: `Workerless-${name}`,
          MetricName: 'ThrottledInvokeCount',
          Dimensions: Object.entries(dimensions).map(([Name, Value]) => ({ Name, Value })),
          StartTime: new Date(Date.now() - 10 * 60_000),
          EndTime: new Date(Date.now() + 60_000),
          Period: 60,
          Statistics: ['Sum'],
        }),
      );
      return (out.Datapoints ?? []).reduce((s, d) => s + (d.Sum ?? 0), 0);
    };
    assert.equal(await sum({ Function: 'slow', Queue: q.name }), throttles);
    assert.equal(await sum({ Function: 'slow', Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded' }), throttles);
  });

  it('CloudWatch holds the counts that were actually processed', async () => {
    const ok = await createQueue('wl-metrics-ok');
    const bad = await createQueue('wl-metrics-bad', { VisibilityTimeout: '30' });
    const name = `it-${ok.name}`;
    await sendMessages(ok.url, bodies(7, 'ok'));
    await sendMessages(bad.url, ['bad-1', 'bad-2']);
    const okDaemon = startDaemon(endpoint.url, [
      '--function',
      'record',
      '--queues',
      ok.name,
      '--metrics',
      'on',
      '--name',
      name,
      '--metrics-interval',
      '1',
    ]);
    const badDaemon = startDaemon(endpoint.url, [
      '--function',
      'fail',
      '--queues',
      bad.name,
      '--metrics',
      'on',
      '--name',
      name,
      '--metrics-interval',
      '1',
    ]);
    await Promise.all([started(okDaemon), started(badDaemon)]);
    await endpoint.waitFor(
      (inv) => inv.filter((i) => eventRecords(i)[0]?.eventSourceARN === ok.arn && i.status === 'success').length === 7,
      20_000,
    );
    await endpoint.waitFor(
      (inv) => inv.filter((i) => eventRecords(i)[0]?.eventSourceARN === bad.arn && i.status === 'error').length === 2,
      20_000,
    );
    await delay(300); // let the last deletes land before the stop
    assert.equal(await stopDaemon(okDaemon), 0);
    assert.equal(await stopDaemon(badDaemon), 0);

    const cw = cloudWatchClient();
    const stat = async (metric: string, fn: string, queue: string, statistic: 'Sum' | 'SampleCount') => {
      const out = await cw.send(
        new GetMetricStatisticsCommand({
          Namespace: `Workerless-${name}`,
          MetricName: metric,
          Dimensions: [
            { Name: 'Function', Value: fn },
            { Name: 'Queue', Value: queue },
          ],
          StartTime: new Date(Date.now() - 10 * 60_000),
          EndTime: new Date(Date.now() + 60_000),
          Period: 60,
          Statistics: [statistic],
        }),
      );
      return (out.Datapoints ?? []).reduce((s, d) => s + (d[statistic] ?? 0), 0);
    };
    assert.equal(await stat('PolledEventCount', 'record', ok.name, 'Sum'), 7);
    assert.equal(await stat('DeletedEventCount', 'record', ok.name, 'Sum'), 7);
    assert.equal(await stat('ProcessingDuration', 'record', ok.name, 'SampleCount'), 7);
    assert.equal(await stat('FailedInvokeEventCount', 'record', ok.name, 'Sum'), 0);
    assert.equal(await stat('PolledEventCount', 'fail', bad.name, 'Sum'), 2);
    assert.equal(await stat('FailedInvokeEventCount', 'fail', bad.name, 'Sum'), 2);
    assert.equal(await stat('DeletedEventCount', 'fail', bad.name, 'Sum'), 0);
    assert.equal(await stat('InvokedEventCount', 'record', ok.name, 'Sum'), 7);
    assert.equal(await stat('InvokedEventCount', 'fail', bad.name, 'Sum'), 2);
    // The same statistic sets through GetMetricData (what dashboards and metric math read): 7 samples, min <= max.
    const read = async (stat: string) => {
      const out = await cw.send(
        new GetMetricDataCommand({
          MetricDataQueries: [
            {
              Id: 'd',
              MetricStat: {
                Metric: {
                  Namespace: `Workerless-${name}`,
                  MetricName: 'ProcessingDuration',
                  Dimensions: [
                    { Name: 'Function', Value: 'record' },
                    { Name: 'Queue', Value: ok.name },
                  ],
                },
                Period: 60,
                Stat: stat,
              },
            },
          ],
          StartTime: new Date(Date.now() - 10 * 60_000),
          EndTime: new Date(Date.now() + 60_000),
        }),
      );
      return out.MetricDataResults?.[0]?.Values ?? [];
    };
    assert.equal(
      (await read('SampleCount')).reduce((s, v) => s + v, 0),
      7,
    );
    assert.ok(Math.min(...(await read('Minimum'))) <= Math.max(...(await read('Maximum'))));
    cw.destroy();
  });
});
