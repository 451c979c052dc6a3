// The failure destination (issue 23) through the built CLI against LocalStack's SQS and the test Lambda endpoint;
// SNS topics against moto's SNS (LocalStack here runs without SNS), whose SQS subscription delivers the record.
// The last allowed receive is the queue's RedrivePolicy maxReceiveCount ("Using dead-letter queues", SQS Developer
// Guide: SQS moves a message to the DLQ when a receive would take its receive count past it).
import assert from 'node:assert/strict';
import { CreateTopicCommand, SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';
import { CreateQueueCommand, GetQueueAttributesCommand, type Message } from '@aws-sdk/client-sqs';
import { after, before, describe, it } from 'node:test';
import {
  countMessages,
  createQueue,
  createQueueWithDlq,
  drainQueue,
  sendMessages,
  sqsClient,
  TEST_CREDENTIALS,
  TEST_REGION,
  uniqueQueueName,
} from '../support/aws.ts';
import { startDaemon, started, stopDaemon, problems } from '../support/daemon.ts';
import { until } from '../support/factories.ts';
import { eventRecords, functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';
import { ensureSqsServer, sqsServers } from '../support/sqs-servers.ts';
import { DEDUPLICATION_ATTRIBUTE, deduplicationKey } from '../../src/settle/failure-destination.ts';

/** The record as docs/delivery.md#failure-destination documents it. */
interface FailureRecordJson {
  version: string;
  condition: string;
  function: string;
  requestId: string | null;
  attempts: number;
  maxAttempts: number;
  error: { kind: string; errorType: string; errorMessage: string };
  sentAt: string | null;
  firstReceivedAt: string | null;
  queue: { name: string; arn: string };
  record: { messageId: string; body: string; attributes: Record<string, string>; eventSourceARN: string };
}

const recordsOf = (messages: readonly Message[]): FailureRecordJson[] => messages.map((m) => JSON.parse(m.Body ?? '') as FailureRecordJson);

/** Receives from `url` until `n` messages arrived (deleting them), or fails after `timeoutMs`. */
async function collect(url: string, n: number, timeoutMs: number, client = sqsClient()): Promise<Message[]> {
  const got: Message[] = [];
  await until(
    async () => {
      got.push(...(await drainQueue(url, { waitTimeSec: 1, client })));
      return got.length >= n;
    },
    timeoutMs,
    `${n} records at ${url}`,
    100,
  );
  return got;
}

describe('failure destination against LocalStack', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({
      functions: {
        fail: { handler: functionFixture('fail.mjs') },
        'fail-down': { handler: functionFixture('fail.mjs') },
        'fail-dlq': { handler: functionFixture('fail.mjs') },
        'fail-sns': { handler: functionFixture('fail.mjs') },
        'fail-fifo': { handler: functionFixture('fail.mjs') },
      },
    });
  });
  after(() => endpoint.stop());

  it('a message that always fails reaches the destination with its reason after exactly maxReceiveCount receives; the DLQ stays empty', async () => {
    const { queue: q, dlq } = await createQueueWithDlq('wl-fd', 3, { VisibilityTimeout: '1' });
    const dest = await createQueue('wl-fd-dest');
    const [id] = await sendMessages(q.url, ['{"order":42}']);
    const daemon = startDaemon(endpoint.url, ['--function', 'fail', '--queues', q.name, '--failure-destination', dest.url]);
    await started(daemon);
    const [delivered] = recordsOf(await collect(dest.url, 1, 30_000));
    // Nothing more comes: the message was deleted after the third receive.
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(await stopDaemon(daemon), 0);
    const runs = endpoint.invocations.filter((i) => i.functionName === 'fail' && eventRecords(i).some((r) => r.messageId === id));
    assert.deepEqual(
      runs.map((i) => eventRecords(i)[0]!.attributes['ApproximateReceiveCount']),
      ['1', '2', '3'],
    );
    assert.ok(delivered);
    assert.equal(delivered.version, '1.0');
    assert.equal(delivered.condition, 'RetriesExhausted');
    assert.equal(delivered.function, 'fail');
    assert.deepEqual(delivered.error, { kind: 'function-error', errorType: 'Error', errorMessage: 'boom' });
    assert.equal(delivered.attempts, 3);
    assert.equal(delivered.maxAttempts, 3);
    assert.equal(delivered.requestId, runs[2]!.requestId, "the failed invocation's Lambda request id");
    assert.equal(delivered.record.messageId, id);
    assert.equal(delivered.record.body, '{"order":42}');
    assert.equal(delivered.record.eventSourceARN, q.arn);
    assert.equal(delivered.queue.arn, q.arn);
    assert.ok(delivered.sentAt !== null && !Number.isNaN(Date.parse(delivered.sentAt)));
    assert.equal(await countMessages(dlq.url), 0, 'the DLQ stays empty');
    assert.equal(await countMessages(q.url), 0, 'the message was deleted');
    assert.ok(daemon.logs().some((l) => l['msg'] === 'failed messages sent to the failure destination; deleting them'));
  });

  it('the destination down for a while loses nothing: the messages stay and go once it is back (--max-attempts, no redrive policy)', async (t) => {
    const q = await createQueue('wl-fd-down', { VisibilityTimeout: '1' });
    // Created only later: until then every SendMessage is refused (QueueDoesNotExist).
    const destName = uniqueQueueName('wl-fd-later');
    const sqs = sqsClient();
    const destUrl = q.url.replace(/[^/]+$/, destName);
    const ids = await sendMessages(q.url, ['a', 'b', 'c']);
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'fail-down',
      '--queues',
      q.name,
      '--failure-destination',
      destUrl,
      '--max-attempts',
      '2',
      '--batch-size',
      '3',
    ]);
    await started(daemon);
    const refusals = () =>
      daemon
        .logs()
        .filter(
          (l) => l['msg'] === 'could not send failed messages to the failure destination; they stay on the queue under its redrive policy',
        );
    await until(() => refusals().length >= 2, 30_000, 'two refused deliveries', 100);
    assert.equal(await countMessages(q.url), 3, 'nothing deleted while the destination is down');
    const created = await sqs.send(new CreateQueueCommand({ QueueName: destName }));
    const createdUrl = created.QueueUrl ?? '';
    assert.equal(createdUrl.split('/').pop(), destName);
    const delivered = recordsOf(await collect(createdUrl, 3, 30_000));
    assert.equal(await stopDaemon(daemon), 0);
    t.diagnostic(
      `refused ${refusals().length} times while down; delivered ${delivered.length}; attempts ${delivered.map((r) => r.attempts).join(', ')}`,
    );
    assert.deepEqual(delivered.map((r) => r.record.messageId).sort(), [...ids].sort());
    assert.ok(delivered.every((r) => r.attempts >= 2 && r.maxAttempts === 2));
    assert.equal(await countMessages(q.url), 0);
    assert.equal((refusals()[0]?.['failed'] as { code: string }[] | undefined)?.[0]?.code, 'QueueDoesNotExist');
  });

  it("while the destination refuses, the queue's own redrive moves the message to the DLQ, as without a destination", async () => {
    const { queue: q, dlq } = await createQueueWithDlq('wl-fd-dlq', 2, { VisibilityTimeout: '1' });
    const missing = q.url.replace(/[^/]+$/, uniqueQueueName('wl-fd-never'));
    const [id] = await sendMessages(q.url, ['x']);
    const daemon = startDaemon(endpoint.url, ['--function', 'fail-dlq', '--queues', q.name, '--failure-destination', missing]);
    await started(daemon);
    const [moved] = await collect(dlq.url, 1, 30_000);
    assert.equal(await stopDaemon(daemon), 0);
    assert.equal(moved?.MessageId, id);
    assert.ok(problems(daemon).includes('QueueDoesNotExist'), problems(daemon));
  });

  it('a queue with a destination but neither a redrive policy nor --max-attempts refuses to start in one line (exit 1); a bad destination is a usage error (exit 2)', async () => {
    const q = await createQueue('wl-fd-bare');
    const dest = await createQueue('wl-fd-bare-dest');
    const refused = startDaemon(endpoint.url, ['--function', 'fail', '--queues', q.name, '--failure-destination', dest.url]);
    const { code } = await refused.exited;
    assert.equal(code, 1);
    assert.equal(
      refused.stderr().trim(),
      `workerless: queue "${q.name}" has a failure destination but no redrive policy: give it a RedrivePolicy (maxReceiveCount) or set --max-attempts`,
    );
    const typo = startDaemon(endpoint.url, ['--function', 'fail', '--queues', q.name, '--failure-destination', 'failures']);
    assert.equal((await typo.exited).code, 2);
    assert.match(typo.stderr(), /--failure-destination must be an SQS queue URL .* or an SNS topic ARN, got "failures"/);
    assert.doesNotMatch(typo.stderr(), /\n\s+at /, 'no stack trace');
  });

  it('FIFO source to FIFO destination: records arrive in group order, with the source group as MessageGroupId', async () => {
    const { queue: q } = await createQueueWithDlq('wl-fd-src.fifo', 2, { VisibilityTimeout: '1' });
    const dest = await createQueue('wl-fd-dest.fifo');
    const ids = await sendMessages(q.url, [
      { body: 'g1-0', groupId: 'g1' },
      { body: 'g1-1', groupId: 'g1' },
      { body: 'g1-2', groupId: 'g1' },
    ]);
    const daemon = startDaemon(endpoint.url, [
      '--function',
      'fail-fifo',
      '--queues',
      q.name,
      '--failure-destination',
      dest.url,
      '--batch-size',
      '3',
    ]);
    await started(daemon);
    const got = await collect(dest.url, 3, 40_000);
    assert.equal(await stopDaemon(daemon), 0);
    assert.deepEqual(
      recordsOf(got).map((r) => r.record.messageId),
      ids,
    );
    assert.deepEqual(
      got.map((m) => m.Attributes?.['MessageGroupId']),
      ['g1', 'g1', 'g1'],
    );
    // The deduplication key of each record: the source queue's ARN and message id (docs/delivery.md#failure-destination).
    const keys = ids.map((id) => deduplicationKey(q.arn, id));
    assert.deepEqual(
      got.map((m) => m.Attributes?.['MessageDeduplicationId']),
      keys,
    );
    assert.deepEqual(
      got.map((m) => m.MessageAttributes?.[DEDUPLICATION_ATTRIBUTE]?.StringValue),
      keys,
    );
  });

  it('an SNS topic (moto): the record reaches the topic’s SQS subscriber; a missing topic leaves the message on the queue', async (t) => {
    const moto = sqsServers().find((s) => s.name === 'moto')!;
    await ensureSqsServer(moto);
    const sns = new SNSClient({ endpoint: moto.endpoint, region: TEST_REGION, credentials: TEST_CREDENTIALS });
    const motoSqs = sqsClient(moto.endpoint);
    const topic = await sns.send(new CreateTopicCommand({ Name: uniqueQueueName('wl-fd-topic') }));
    const sub = await createQueue('wl-fd-sub', {}, motoSqs);
    await sns.send(
      new SubscribeCommand({ TopicArn: topic.TopicArn, Protocol: 'sqs', Endpoint: sub.arn, Attributes: { RawMessageDelivery: 'true' } }),
    );
    const { queue: q, dlq } = await createQueueWithDlq('wl-fd-sns', 2, { VisibilityTimeout: '1' });
    const [id] = await sendMessages(q.url, ['to sns']);
    const missingTopic = `${topic.TopicArn!}-missing`;
    const daemon = startDaemon(endpoint.url, ['--function', 'fail-sns', '--queues', q.name, '--failure-destination', topic.TopicArn!], {
      AWS_ENDPOINT_URL_SNS: moto.endpoint,
    });
    await started(daemon);
    const [delivered] = recordsOf(await collect(sub.url, 1, 30_000, motoSqs));
    assert.equal(await stopDaemon(daemon), 0);
    assert.equal(delivered?.record.messageId, id);
    assert.deepEqual(delivered?.error, { kind: 'function-error', errorType: 'Error', errorMessage: 'boom' });
    assert.equal(await countMessages(dlq.url), 0);

    // The topic does not exist: Publish is refused (NotFound), the message stays and its redrive moves it to the DLQ.
    const [kept] = await sendMessages(q.url, ['to a missing topic']);
    const down = startDaemon(endpoint.url, ['--function', 'fail-sns', '--queues', q.name, '--failure-destination', missingTopic], {
      AWS_ENDPOINT_URL_SNS: moto.endpoint,
    });
    await started(down);
    const [moved] = await collect(dlq.url, 1, 30_000);
    assert.equal(await stopDaemon(down), 0);
    assert.equal(moved?.MessageId, kept);
    t.diagnostic(
      problems(down)
        .split('\n')
        .find((l) => l.includes('failure destination')) ?? '',
    );
    const attrs = await motoSqs.send(new GetQueueAttributesCommand({ QueueUrl: sub.url, AttributeNames: ['ApproximateNumberOfMessages'] }));
    assert.equal(attrs.Attributes?.['ApproximateNumberOfMessages'], '0', 'nothing reached the subscriber for the missing topic');
  });
});

// The SQS-facing part (the redrive policy read, SendMessage, the delete) against the three SQS implementations,
// with both --aws-client values, as test/integration/sqs-conformance.test.ts runs its scenarios.
describe('failure destination on every SQS implementation', () => {
  let endpoint: LambdaEndpoint;
  before(async () => {
    endpoint = await startLambdaEndpoint({ functions: { 'fail-conf': { handler: functionFixture('fail.mjs') } } });
  });
  after(() => endpoint.stop());

  for (const server of sqsServers()) {
    for (const awsClient of ['lean', 'sdk'] as const) {
      it(`${server.name}, --aws-client ${awsClient}: the record after maxReceiveCount receives, the DLQ empty`, async () => {
        await ensureSqsServer(server);
        const sqs = sqsClient(server.endpoint);
        const { queue: q, dlq } = await createQueueWithDlq('wl-fd-conf', 2, { VisibilityTimeout: '1' }, sqs);
        const dest = await createQueue('wl-fd-conf-dest', {}, sqs);
        const [id] = await sendMessages(q.url, ['conf'], sqs);
        const daemon = startDaemon(
          endpoint.url,
          ['--aws-client', awsClient, '--function', 'fail-conf', '--queues', q.url, '--failure-destination', dest.url],
          { AWS_ENDPOINT_URL_SQS: server.endpoint },
        );
        await started(daemon);
        const [delivered] = recordsOf(await collect(dest.url, 1, 30_000, sqs));
        assert.equal(await stopDaemon(daemon), 0);
        assert.equal(delivered?.record.messageId, id);
        assert.equal(delivered?.attempts, 2);
        assert.equal(delivered?.maxAttempts, 2);
        assert.equal(await countMessages(dlq.url, sqs), 0);
        assert.equal(await countMessages(q.url, sqs), 0);
      });
    }
  }
});
