// Issue 23, "Backlog gauges": through the CLI against LocalStack, the gauges in /metrics and CloudWatch match the
// queue's own counts (GetQueueAttributes, read by the test's own client), and the age histogram counts each
// received message by its SentTimestamp.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { GetMetricStatisticsCommand } from '@aws-sdk/client-cloudwatch';
import { cloudWatchClient, createQueue, messageCounts, sendMessages, type MessageCounts } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import { freePort, get, sample } from '../support/http.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

describe('backlog gauges against LocalStack', { timeout: 120_000 }, () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    // Each invocation holds its message for 12 s, so the counts stand still while they are compared.
    endpoint = await startLambdaEndpoint({
      functions: { hold: { handler: functionFixture('slow.mjs'), timeoutSec: 60, env: { SLOW_MS: '12000' } } },
    });
  });
  after(() => endpoint.stop());

  it('visible, in flight and delayed match the queue; the age at receive is counted per message', async () => {
    const q = await createQueue('wl-backlog', { VisibilityTimeout: '60' });
    await sendMessages(q.url, [
      ...Array.from({ length: 10 }, (_, i) => `visible-${i}`),
      ...Array.from({ length: 3 }, (_, i) => ({ body: `delayed-${i}`, delaySeconds: 600 })),
    ]);
    await delay(1_500); // every message is at least this old when received
    const port = await freePort();
    const name = `it-${q.name}`;
    const daemon = startDaemon(endpoint.url, [
      ...['--function', 'hold', '--queues', q.name, '--concurrency', '2', '--visibility-refresh', '1s'],
      ...['--http-port', String(port), '--metrics', 'on', '--name', name, '--metrics-interval', '1'],
    ]);
    await started(daemon);
    const base = `http://127.0.0.1:${port}`;
    const labels = { function: 'hold', queue: q.name };
    const gauges = async (): Promise<MessageCounts & { ages: number | undefined; ageSum: number | undefined }> => {
      const text = (await get(base, '/metrics'))?.body ?? '';
      return {
        visible: sample(text, 'workerless_queue_messages_visible', labels) ?? -1,
        notVisible: sample(text, 'workerless_queue_messages_not_visible', labels) ?? -1,
        delayed: sample(text, 'workerless_queue_messages_delayed', labels) ?? -1,
        ages: sample(text, 'workerless_message_age_at_receive_seconds_count', labels),
        ageSum: sample(text, 'workerless_message_age_at_receive_seconds_sum', labels),
      };
    };
    // Two loops hold one message each; the other 8 wait, and the 3 delayed ones wait out their delay.
    await until(() => endpoint.invocations.filter((i) => i.status === 'running').length === 2, 20_000, 'two invocations running', 50);
    let seen: Awaited<ReturnType<typeof gauges>> | undefined;
    let queue: MessageCounts | undefined;
    await until(
      async () => {
        seen = await gauges();
        queue = await messageCounts(q.url);
        return seen.visible === queue.visible && seen.notVisible === queue.notVisible && seen.delayed === queue.delayed;
      },
      8_000,
      'the gauges to match the queue',
      200,
    );
    assert.deepEqual(queue, { visible: 8, notVisible: 2, delayed: 3 });
    assert.equal(seen?.ages, 2, 'one age per received message');
    assert.ok((seen?.ageSum ?? 0) >= 2 * 1.4, `ages from SentTimestamp: sum ${seen?.ageSum} s`);

    assert.equal(await stopDaemon(daemon), 0);
    const maximum = async (metric: string) => {
      const out = await cloudWatchClient().send(
        new GetMetricStatisticsCommand({
          Namespace: `Workerless-${name}`,
          MetricName: metric,
          Dimensions: [
            { Name: 'Function', Value: 'hold' },
            { Name: 'Queue', Value: q.name },
          ],
          StartTime: new Date(Date.now() - 10 * 60_000),
          EndTime: new Date(Date.now() + 60_000),
          Period: 60,
          Statistics: ['Maximum', 'SampleCount'],
        }),
      );
      return Math.max(-1, ...(out.Datapoints ?? []).map((d) => d.Maximum ?? -1));
    };
    assert.equal(await maximum('QueueMessagesDelayed'), 3);
    assert.equal(await maximum('QueueMessagesNotVisible'), 2);
    assert.ok((await maximum('MessageAgeAtReceive')) >= 1_400, 'ages in milliseconds');
  });
});
