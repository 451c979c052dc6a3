// The failure destination while it misbehaves, through the built CLI against LocalStack's SQS, with a fault proxy
// in front of SQS that faults only the SendMessage calls to the destination queue. Follows "SendMessage" (SQS API
// Reference: MessageAttributes, and MessageDeduplicationId for FIFO queues) and "Using dead-letter queues" (SQS
// Developer Guide: ApproximateReceiveCount grows with every receive). --max-attempts 2 on a queue without a
// redrive policy: nothing moves the message but workerless, so the queue delivers it again and again.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { Message } from '@aws-sdk/client-sqs';
import { after, before, describe, it } from 'node:test';
import { countMessages, createQueue, drainQueue, localstackEndpoint, sendMessages, type TestQueue } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { startFaultProxy, type FaultProxy, type RequestFault } from '../support/fault-proxy.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureLocalStack } from '../support/localstack.ts';

const MAX_ATTEMPTS = 2;
/** The message attribute that carries a record's deduplication key (docs/delivery.md#failure-destination). */
const KEY_ATTRIBUTE = 'workerless-deduplication-id';

interface RecordJson {
  attempts: number;
  requestId: string | null;
  error: { kind: string; errorType: string; errorMessage: string };
  record: { messageId: string };
}

describe('failure destination faults: the function runs at most --max-attempts times', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    await ensureLocalStack();
    endpoint = await startLambdaEndpoint({ functions: { 'fd-fault': { handler: functionFixture('fail.mjs') } } });
  });
  after(() => endpoint.stop());

  /** The daemon on `q` with its SQS calls through `proxy`, the destination `dest`. */
  const daemonFor = (q: TestQueue, dest: TestQueue, proxy: FaultProxy) =>
    startDaemon(
      endpoint.url,
      ['--function', 'fd-fault', '--queues', q.name, '--failure-destination', dest.url, '--max-attempts', String(MAX_ATTEMPTS)],
      { AWS_ENDPOINT_URL_SQS: proxy.url },
    );
  const runsOf = (id: string) => endpoint.invocations.filter((i) => eventRecords(i).some((r) => r.messageId === id));
  const sendsTo = (proxy: FaultProxy, dest: TestQueue) => proxy.calls('SendMessage').filter((c) => c.queueUrl === dest.url);
  const keyOf = (q: TestQueue, id: string) => createHash('sha256').update(`${q.arn}\n${id}`).digest('hex');

  /** A queue (1 s visibility timeout), its destination and one message; the destination's SendMessage faulted. */
  async function scenario(name: string, fault: RequestFault) {
    const q = await createQueue(`wl-fdf-${name}`, { VisibilityTimeout: '1' });
    const dest = await createQueue(`wl-fdf-${name}-dest`);
    const proxy = await startFaultProxy({ upstream: localstackEndpoint() });
    const rule = proxy.inject({ operation: 'SendMessage', match: (r) => r.queueUrl === dest.url, fault });
    const [id] = await sendMessages(q.url, ['{"order":7}']);
    return { q, dest, proxy, rule, id: id! };
  }

  it('a destination that answers 500: the function runs twice, the message stays; once the destination is back, one record with the last reason, and the message is deleted', async (t) => {
    const { q, dest, proxy, rule, id } = await scenario('500', { kind: 'status', status: 500, errorType: 'InternalError' });
    const daemon = daemonFor(q, dest, proxy);
    try {
      await started(daemon);
      // Deliveries keep being tried (each one the SDK's 3 attempts) while the message keeps coming back.
      await until(() => sendsTo(proxy, dest).length >= 4 * 3, 30_000, 'four refused deliveries', 100);
      assert.equal(runsOf(id).length, MAX_ATTEMPTS, 'the function ran max-attempts times, not once per receive');
      assert.equal(await countMessages(q.url), 1, 'nothing deleted while the destination refuses');
      rule.clear();
      const got: Message[] = [];
      await until(
        async () => {
          got.push(...(await drainQueue(dest.url)));
          return got.length >= 1 && (await countMessages(q.url)) === 0;
        },
        20_000,
        'the record delivered and the message deleted',
        100,
      );
      await new Promise((r) => setTimeout(r, 1500));
      got.push(...(await drainQueue(dest.url)));
      t.diagnostic(`SendMessage calls to the destination: ${sendsTo(proxy, dest).length}; invocations: ${runsOf(id).length}`);
      assert.equal(runsOf(id).length, MAX_ATTEMPTS);
      assert.equal(got.length, 1, 'one record');
      const record = JSON.parse(got[0]!.Body ?? '') as RecordJson;
      assert.equal(record.record.messageId, id);
      assert.ok(record.attempts > MAX_ATTEMPTS, `delivered on a later receive (${record.attempts})`);
      // The reason of the last invocation, not RetriesExhausted: this process remembered it.
      assert.deepEqual(record.error, { kind: 'function-error', errorType: 'Error', errorMessage: 'boom' });
      assert.equal(record.requestId, runsOf(id)[MAX_ATTEMPTS - 1]!.requestId);
      assert.equal(got[0]!.MessageAttributes?.[KEY_ATTRIBUTE]?.StringValue, keyOf(q, id));
    } finally {
      await stopDaemon(daemon);
      await proxy.close();
    }
  });

  it('a destination that answers in 8 s (past a 5 s deadline): one record, the function runs twice, the message is deleted', async (t) => {
    const { q, dest, proxy, id } = await scenario('slow', { kind: 'delay', ms: 8_000 });
    const daemon = daemonFor(q, dest, proxy);
    try {
      await started(daemon);
      await until(async () => (await countMessages(q.url)) === 0, 40_000, 'the message deleted', 200);
      // Long enough for a second record, had the first send been given up.
      await new Promise((r) => setTimeout(r, 2_000));
      const got = await drainQueue(dest.url);
      t.diagnostic(`records: ${got.length}; SendMessage calls: ${sendsTo(proxy, dest).length}; invocations: ${runsOf(id).length}`);
      assert.equal(runsOf(id).length, MAX_ATTEMPTS);
      assert.equal(got.length, 1, 'one record');
      assert.equal(sendsTo(proxy, dest).length, 1, 'one SendMessage');
    } finally {
      await stopDaemon(daemon);
      await proxy.close();
    }
  });

  it('a destination that accepts but whose answer is lost: the copies carry one deduplication key, and the function runs twice', async (t) => {
    const { q, dest, proxy, rule, id } = await scenario('lost', { kind: 'reset-after-send' });
    const daemon = daemonFor(q, dest, proxy);
    try {
      await started(daemon);
      // Every attempt reached the destination; none of its answers came back.
      await until(() => sendsTo(proxy, dest).length >= 2 * 3, 30_000, 'two deliveries whose answers were lost', 100);
      assert.equal(runsOf(id).length, MAX_ATTEMPTS);
      rule.clear();
      await until(async () => (await countMessages(q.url)) === 0, 20_000, 'the message deleted', 100);
      const got = await drainQueue(dest.url);
      t.diagnostic(`copies of the record: ${got.length}; invocations: ${runsOf(id).length}`);
      assert.equal(runsOf(id).length, MAX_ATTEMPTS);
      assert.ok(got.length >= 2, `copies arrived (${got.length})`);
      const keys = new Set(got.map((m) => m.MessageAttributes?.[KEY_ATTRIBUTE]?.StringValue));
      assert.deepEqual([...keys], [keyOf(q, id)], 'every copy has the same key');
      assert.ok(got.every((m) => (JSON.parse(m.Body ?? '') as RecordJson).record.messageId === id));
    } finally {
      await stopDaemon(daemon);
      await proxy.close();
    }
  });
});
