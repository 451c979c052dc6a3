// A retry delay the function chooses (issue 23): a batchItemFailures entry's retryDelaySeconds, through the built
// CLI against LocalStack and the test Lambda endpoint. The delay is applied with ChangeMessageVisibility (SQS API
// Reference, ChangeMessageVisibility; "Amazon SQS visibility timeout" in the SQS Developer Guide), before
// --retry-backoff's curve. Measured gaps are logged (t.diagnostic).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createQueue, sendMessages } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const DELAY_SEC = 3;

describe('retry delay chosen by the function, against LocalStack', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: {
        'delay-3': { handler: functionFixture('retry-delay.mjs'), env: { RETRY_DELAY_SEC: String(DELAY_SEC) } },
        'delay-bad': { handler: functionFixture('retry-delay.mjs'), env: { RETRY_DELAY_JSON: '"soon"' } },
      },
    });
  });
  after(() => endpoint.stop());

  // The upper bound allows 2 s: SQS counts visibility in whole seconds, and LocalStack returns a message whose
  // visibility lapsed on its queue-update cycle (QueueUpdateWorker, about once a second), so a long poll may see it
  // a second late (CI measured 4.01 s once). The back-off (20 s) and the visibility timeout (30 s) stay far out.
  it(`a delay of ${DELAY_SEC} s is measured from ${DELAY_SEC} s to ${DELAY_SEC} + 2 s, ahead of --retry-backoff (20 s) and the 30 s visibility timeout`, async (t) => {
    const q = await createQueue('wl-delay', { VisibilityTimeout: '30' });
    const [id] = await sendMessages(q.url, ['retry me']);
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'delay-3',
      '--queues',
      q.name,
      '--retry-backoff',
      '20s',
      '--retry-backoff-jitter',
      '0',
    ]);
    await started(daemon);
    const runs = () => endpoint.invocations.filter((i) => i.functionName === 'delay-3' && eventRecords(i).some((r) => r.messageId === id));
    await until(() => runs().length >= 2 && runs()[1]!.endedAt !== undefined, 20_000, 'the retry', 50);
    assert.equal(await stopDaemon(daemon), 0);
    const [first, second] = runs();
    const gapSec = (second!.startedAt - first!.endedAt!) / 1000;
    t.diagnostic(`retry came ${gapSec.toFixed(2)} s after the failed invocation ended; asked for ${DELAY_SEC} s`);
    assert.ok(gapSec >= DELAY_SEC - 0.5 && gapSec <= DELAY_SEC + 2, `gap ${gapSec} s, asked for ${DELAY_SEC} s`);
    assert.deepEqual(
      runs().map((i) => eventRecords(i)[0]!.attributes['ApproximateReceiveCount']),
      ['1', '2'],
    );
    const set = daemon.logs().filter((l) => l['msg'] === 'retry delay set as the function chose');
    assert.equal(set[0]?.['delaySec'], DELAY_SEC);
  });

  it('an invalid delay is logged and the message gets --retry-backoff instead', async (t) => {
    const q = await createQueue('wl-delay-bad', { VisibilityTimeout: '30' });
    const [id] = await sendMessages(q.url, ['retry me']);
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'delay-bad',
      '--queues',
      q.name,
      '--retry-backoff',
      '2s',
      '--retry-backoff-jitter',
      '0',
    ]);
    await started(daemon);
    const runs = () =>
      endpoint.invocations.filter((i) => i.functionName === 'delay-bad' && eventRecords(i).some((r) => r.messageId === id));
    await until(() => runs().length >= 2, 20_000, 'the retry', 50);
    assert.equal(await stopDaemon(daemon), 0);
    const [first, second] = runs();
    const gapSec = (second!.startedAt - first!.endedAt!) / 1000;
    t.diagnostic(`retry came ${gapSec.toFixed(2)} s after the failed invocation; the back-off is 2 s`);
    assert.ok(gapSec >= 1.8 && gapSec <= 3.5, `gap ${gapSec} s`);
    const warned = daemon
      .logs()
      .filter((l) => l['msg'] === 'the function gave an invalid retry delay; those messages get the retry back-off instead');
    assert.deepEqual(warned[0]?.['reasons'], ['retryDelaySeconds must be a number of seconds, got string']);
    assert.equal(daemon.child.exitCode, 0);
  });
});
