import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { countMessages, createQueue, createQueueWithDlq, drainQueue, messageCounts, sendMessages } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

describe('settling messages against LocalStack', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: {
        record: { handler: functionFixture('record.mjs') },
        fail: { handler: functionFixture('fail.mjs') },
        partial: { handler: functionFixture('partial.mjs') },
      },
    });
  });
  after(() => endpoint.stop());

  it('success deletes every message', async () => {
    const q = await createQueue('wl-success');
    const ids = await sendMessages(q.url, ['a', 'b', 'c', 'd', 'e']);
    const daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', q.name, '--concurrency', '2']);
    await started(daemon);
    await endpoint.waitFor(
      (inv) => inv.filter((i) => i.status === 'success' && eventRecords(i).some((r) => r.eventSourceARN === q.arn)).length === 5,
      20_000,
    );
    await until(async () => (await countMessages(q.url)) === 0, 10_000, 'queue empty', 200);
    assert.equal(await stopDaemon(daemon), 0);
    const delivered = endpoint.invocations
      .flatMap(eventRecords)
      .filter((r) => r.eventSourceARN === q.arn)
      .map((r) => r.messageId);
    assert.deepEqual([...delivered].sort(), [...ids].sort());
  });

  it('a function error deletes nothing; the message returns with a higher receive count and ends in the DLQ', async () => {
    const { queue: q, dlq } = await createQueueWithDlq('wl-fail', 2, { VisibilityTimeout: '1' });
    const [id] = await sendMessages(q.url, ['poison']);
    const daemon = startDaemon(endpoint.url, ['--function', 'fail', '--queues', q.name]);
    await started(daemon);
    await until(async () => (await countMessages(dlq.url)) === 1, 30_000, 'the message in the DLQ', 200);
    assert.equal(await stopDaemon(daemon), 0);
    const attempts = endpoint.invocations.flatMap((i) => eventRecords(i).filter((r) => r.messageId === id));
    assert.deepEqual(
      attempts.map((r) => r.attributes['ApproximateReceiveCount']),
      ['1', '2'],
    );
    assert.ok(endpoint.invocations.filter((i) => eventRecords(i).some((r) => r.messageId === id)).every((i) => i.status === 'error'));
    assert.equal(await countMessages(q.url), 0);
    const errors = daemon.logs().filter((l) => l['msg'] === 'function error; messages stay on the queue');
    assert.equal(errors.length, 2);
    assert.equal(errors[0]!['errorMessage'], 'boom');
    assert.deepEqual(errors[0]!['messageIds'], [id]);
    assert.ok(!daemon.stdout().includes('poison'), 'message bodies are never logged');
  });

  it('batchItemFailures keeps exactly the listed messages', async () => {
    const q = await createQueue('wl-partial', { VisibilityTimeout: '3' });
    const bodies = ['ok-1', 'fail-1', 'ok-2', 'ok-3', 'fail-2', 'ok-4'];
    await sendMessages(q.url, bodies);
    const daemon = startDaemon(endpoint.url, ['--function', 'partial', '--queues', q.name, '--batch-size', '10']);
    await started(daemon);
    const invoked = () => endpoint.invocations.flatMap(eventRecords).filter((r) => r.eventSourceARN === q.arn).length;
    await until(() => invoked() >= bodies.length, 20_000, 'every message invoked once', 200);
    assert.equal(await stopDaemon(daemon), 0);
    await until(async () => (await messageCounts(q.url)).notVisible === 0, 15_000, 'kept messages visible again', 200);
    const left = await drainQueue(q.url);
    assert.deepEqual(left.map((m) => m.Body).sort(), ['fail-1', 'fail-2']);
  });

  it('--delete never deletes nothing', async () => {
    const q = await createQueue('wl-never', { VisibilityTimeout: '30' });
    await sendMessages(q.url, ['x', 'y', 'z']);
    const daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', q.name, '--delete', 'never']);
    await started(daemon);
    await endpoint.waitFor(
      (inv) => inv.filter((i) => i.status === 'success' && eventRecords(i)[0]?.eventSourceARN === q.arn).length === 3,
      20_000,
    );
    assert.equal(await stopDaemon(daemon), 0);
    assert.deepEqual(await messageCounts(q.url), { visible: 0, notVisible: 3, delayed: 0 });
  });
});
