// Proves LocalStack's SQS and CloudWatch behave the way our integration tests rely on: long polling,
// system and message attributes (with AWS's MD5 rules), FIFO attributes and group locking, visibility
// timeout redelivery, DLQ redrive and CloudWatch statistics read-back. Needs `localstack/localstack.sh start`.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { GetMetricDataCommand, GetMetricStatisticsCommand, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  cloudWatchClient,
  countMessages,
  createQueue,
  createQueueWithDlq,
  deleteQueue,
  drainQueue,
  LOCALSTACK_ACCOUNT_ID,
  messageCounts,
  sendMessages,
  sqsClient,
  TEST_REGION,
} from '../support/aws.ts';
import { ensureLocalStack } from '../support/localstack.ts';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const md5 = (data: string | Uint8Array): string => createHash('md5').update(data).digest('hex');

/** AWS's documented MD5OfMessageAttributes: names sorted; each field length-prefixed (4-byte big-endian). */
function md5OfMessageAttributes(attributes: Record<string, MessageAttributeValue>): string {
  const parts: Buffer[] = [];
  const field = (value: Uint8Array): void => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(value.length);
    parts.push(length, Buffer.from(value));
  };
  for (const name of Object.keys(attributes).sort()) {
    const attribute = attributes[name];
    assert.ok(attribute?.DataType !== undefined);
    field(Buffer.from(name));
    field(Buffer.from(attribute.DataType));
    if (attribute.BinaryValue !== undefined) {
      parts.push(Buffer.from([2]));
      field(attribute.BinaryValue);
    } else {
      parts.push(Buffer.from([1]));
      field(Buffer.from(attribute.StringValue ?? ''));
    }
  }
  return md5(Buffer.concat(parts));
}

async function receive(
  client: SQSClient,
  url: string,
  opts: { wait?: number; max?: number; visibility?: number } = {},
): Promise<Message[]> {
  const out = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      WaitTimeSeconds: opts.wait ?? 0,
      MaxNumberOfMessages: opts.max ?? 10,
      VisibilityTimeout: opts.visibility,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return out.Messages ?? [];
}

describe('LocalStack SQS and CloudWatch, as our tests use them', () => {
  const client = sqsClient();
  const created: string[] = [];
  const track = <T extends { url: string }>(queue: T): T => {
    created.push(queue.url);
    return queue;
  };

  before(async () => {
    await ensureLocalStack();
  });

  after(async () => {
    await Promise.allSettled(created.map((url) => deleteQueue(url, client)));
    client.destroy();
  });

  it("createQueue gives a unique name, a URL and an ARN in LocalStack's account", async () => {
    const queue = track(await createQueue('wl-shape'));
    assert.match(queue.name, /^wl-shape-[0-9a-f]{8}$/);
    assert.equal(queue.arn, `arn:aws:sqs:${TEST_REGION}:${LOCALSTACK_ACCOUNT_ID}:${queue.name}`);
    // Path-style URL (SQS_ENDPOINT_STRATEGY=path) naming LOCALSTACK_HOST, not the endpoint we called.
    assert.match(queue.url, new RegExp(`^http://localhost:\\d+/queue/${TEST_REGION}/${LOCALSTACK_ACCOUNT_ID}/${queue.name}$`));
  });

  it('long polling returns as soon as a message arrives, and waits the full time when none does', async () => {
    const queue = track(await createQueue('wl-longpoll'));
    let started = Date.now();
    assert.deepEqual(await receive(client, queue.url, { wait: 1 }), []);
    const emptyWait = Date.now() - started;
    assert.ok(emptyWait >= 900 && emptyWait < 3000, `empty long poll took ${emptyWait} ms`);

    started = Date.now();
    const polling = receive(client, queue.url, { wait: 10 });
    await sleep(500);
    await sendMessages(queue.url, ['wake up']);
    const messages = await polling;
    const took = Date.now() - started;
    assert.equal(messages[0]?.Body, 'wake up');
    assert.ok(took >= 450 && took < 3000, `long poll returned after ${took} ms`);
  });

  it('an aborted long poll still takes a message that arrives during its wait (it reappears after the visibility timeout)', async () => {
    // Why it matters: aborting ReceiveMessage on shutdown does not cancel it on the server. The message is
    // received by nobody and stays invisible for the visibility timeout (AWS can do the same).
    const queue = track(await createQueue('wl-abort', { VisibilityTimeout: '1' }));
    const abort = new AbortController();
    const polling = client.send(new ReceiveMessageCommand({ QueueUrl: queue.url, WaitTimeSeconds: 2 }), { abortSignal: abort.signal });
    await sleep(200);
    abort.abort();
    await assert.rejects(polling, { name: 'AbortError' });
    await sendMessages(queue.url, ['lost to the aborted poll']);
    await sleep(100);
    assert.deepEqual(await messageCounts(queue.url, client), { visible: 0, notVisible: 1, delayed: 0 });
    const [back] = await receive(client, queue.url, { wait: 4 });
    assert.equal(back?.Body, 'lost to the aborted poll');
    assert.equal(back?.Attributes?.['ApproximateReceiveCount'], '2');
  });

  it('system attributes: ApproximateReceiveCount, SentTimestamp, SenderId, ApproximateFirstReceiveTimestamp, MD5OfBody', async () => {
    const queue = track(await createQueue('wl-sysattrs'));
    const before = Date.now();
    await sendMessages(queue.url, ['hello']);
    const [message] = await receive(client, queue.url, { wait: 1 });
    assert.ok(message?.Attributes !== undefined);
    const a = message.Attributes;
    assert.equal(a['ApproximateReceiveCount'], '1');
    const sent = Number(a['SentTimestamp']);
    const firstReceive = Number(a['ApproximateFirstReceiveTimestamp']);
    assert.ok(sent >= before - 1000 && sent <= Date.now(), `SentTimestamp ${a['SentTimestamp']} is epoch ms`);
    assert.ok(firstReceive >= sent, 'first receive is not before the send');
    // AWS puts the sender's IAM id (AIDA..., or AROA...:session) here; LocalStack the account id.
    assert.equal(a['SenderId'], LOCALSTACK_ACCOUNT_ID);
    assert.equal(message.MD5OfBody, md5('hello'));
    assert.match(message.MessageId ?? '', /^[0-9a-f-]{36}$/);
  });

  it('message attributes String/Number/Binary come back typed, with the MD5 AWS defines', async () => {
    const queue = track(await createQueue('wl-msgattrs'));
    const attributes: Record<string, MessageAttributeValue> = {
      traceId: { DataType: 'String', StringValue: 'abc-123' },
      priority: { DataType: 'Number', StringValue: '42' },
      blob: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 1, 2, 250]) },
      'kind.custom': { DataType: 'String.custom', StringValue: 'x' },
    };
    const sent = await client.send(
      new SendMessageCommand({ QueueUrl: queue.url, MessageBody: 'with attributes', MessageAttributes: attributes }),
    );
    assert.equal(sent.MD5OfMessageAttributes, md5OfMessageAttributes(attributes));
    const [message] = await receive(client, queue.url, { wait: 1 });
    assert.ok(message !== undefined);
    assert.equal(message.MD5OfMessageAttributes, md5OfMessageAttributes(attributes));
    assert.deepEqual(message.MessageAttributes?.['traceId'], { DataType: 'String', StringValue: 'abc-123' });
    assert.deepEqual(message.MessageAttributes?.['priority'], { DataType: 'Number', StringValue: '42' });
    assert.deepEqual(message.MessageAttributes?.['kind.custom'], { DataType: 'String.custom', StringValue: 'x' });
    const blob = message.MessageAttributes?.['blob'];
    assert.equal(blob?.DataType, 'Binary');
    assert.deepEqual(Buffer.from(blob?.BinaryValue ?? new Uint8Array()), Buffer.from([0, 1, 2, 250]));
  });

  it('FIFO: SequenceNumber, MessageGroupId, MessageDeduplicationId; order kept; a group in flight is locked', async () => {
    const queue = track(await createQueue('wl-order.fifo'));
    assert.match(queue.name, /^wl-order-[0-9a-f]{8}\.fifo$/);
    await sendMessages(queue.url, [
      { body: 'g1-a', groupId: 'g1', deduplicationId: 'd1' },
      { body: 'g1-b', groupId: 'g1', deduplicationId: 'd2' },
      { body: 'g2-a', groupId: 'g2', deduplicationId: 'd3' },
      { body: 'g1-dup', groupId: 'g1', deduplicationId: 'd1' }, // dropped: same deduplication id
    ]);
    const first = await receive(client, queue.url, { max: 1 });
    assert.equal(first.length, 1);
    assert.equal(first[0]?.Body, 'g1-a');
    const a = first[0]?.Attributes ?? {};
    assert.equal(a['MessageGroupId'], 'g1');
    assert.equal(a['MessageDeduplicationId'], 'd1');
    assert.match(a['SequenceNumber'] ?? '', /^\d{20}$/);

    // While g1-a is in flight, g1's later message must not be delivered; g2 may be.
    const second = await receive(client, queue.url, { max: 10 });
    assert.deepEqual(
      second.map((m) => m.Body),
      ['g2-a'],
    );

    await client.send(new DeleteMessageCommand({ QueueUrl: queue.url, ReceiptHandle: first[0]?.ReceiptHandle }));
    const third = await receive(client, queue.url, { max: 10 });
    assert.deepEqual(
      third.map((m) => m.Body),
      ['g1-b'],
    );
    const seqA = BigInt(a['SequenceNumber'] ?? '0');
    const seqB = BigInt(third[0]?.Attributes?.['SequenceNumber'] ?? '0');
    assert.ok(seqB > seqA, 'sequence numbers grow');
  });

  it('visibility timeout: an unsettled message comes back with a higher receive count; ChangeMessageVisibility 0 releases it at once', async () => {
    const queue = track(await createQueue('wl-vt', { VisibilityTimeout: '1' }));
    await sendMessages(queue.url, ['retry me']);
    const [first] = await receive(client, queue.url);
    assert.equal(first?.Attributes?.['ApproximateReceiveCount'], '1');
    assert.deepEqual(await messageCounts(queue.url, client), { visible: 0, notVisible: 1, delayed: 0 });
    assert.deepEqual(await receive(client, queue.url), [], 'invisible while in flight');

    const [second] = await receive(client, queue.url, { wait: 3 });
    assert.equal(second?.MessageId, first?.MessageId);
    assert.equal(second?.Attributes?.['ApproximateReceiveCount'], '2');
    assert.notEqual(second?.ReceiptHandle, first?.ReceiptHandle);
    assert.equal(second?.Attributes?.['ApproximateFirstReceiveTimestamp'], first?.Attributes?.['ApproximateFirstReceiveTimestamp']);

    await client.send(
      new ChangeMessageVisibilityCommand({ QueueUrl: queue.url, ReceiptHandle: second?.ReceiptHandle, VisibilityTimeout: 0 }),
    );
    const [third] = await receive(client, queue.url);
    assert.equal(third?.Attributes?.['ApproximateReceiveCount'], '3');
    assert.equal(await countMessages(queue.url, client), 1);
    assert.equal((await drainQueue(queue.url, { waitTimeSec: 5 })).length, 1, 'drained once visible again');
    assert.equal(await countMessages(queue.url, client), 0);
  });

  it('DLQ redrive: after maxReceiveCount receives the next receive moves the message to the DLQ', async () => {
    const { queue, dlq } = await createQueueWithDlq('wl-redrive', 2);
    track(queue);
    track(dlq);
    const [messageId] = await sendMessages(queue.url, [{ body: 'poison', attributes: { a: { DataType: 'String', StringValue: 'kept' } } }]);
    for (const expected of ['1', '2']) {
      const [m] = await receive(client, queue.url, { wait: 1 });
      assert.equal(m?.Attributes?.['ApproximateReceiveCount'], expected);
      await client.send(new ChangeMessageVisibilityCommand({ QueueUrl: queue.url, ReceiptHandle: m?.ReceiptHandle, VisibilityTimeout: 0 }));
    }
    // The third receive finds the count exhausted: the message goes to the DLQ instead of being returned.
    assert.deepEqual(await receive(client, queue.url, { wait: 1 }), []);
    assert.equal(await countMessages(queue.url, client), 0);
    const [dead] = await receive(client, dlq.url, { wait: 2 });
    assert.ok(dead !== undefined, 'message reached the DLQ');
    assert.equal(dead.MessageId, messageId, 'same MessageId in the DLQ');
    assert.equal(dead.Body, 'poison');
    assert.equal(dead.MessageAttributes?.['a']?.StringValue, 'kept');
    assert.equal(dead.Attributes?.['DeadLetterQueueSourceArn'], queue.arn);
    // The receive count is not reset by the move (2 receives on the source + this one).
    assert.equal(dead.Attributes?.['ApproximateReceiveCount'], '3');
  });

  it('CloudWatch: PutMetricData (StatisticValues and Values/Counts) reads back through GetMetricStatistics and GetMetricData', async () => {
    const cw = cloudWatchClient();
    try {
      const namespace = `Workerless/Test-${randomUUID().slice(0, 8)}`;
      const dimensions = [{ Name: 'Queue', Value: 'wl-high' }];
      const now = new Date();
      await cw.send(
        new PutMetricDataCommand({
          Namespace: namespace,
          MetricData: [
            {
              MetricName: 'InvokeDuration',
              Dimensions: dimensions,
              Timestamp: now,
              Unit: 'Milliseconds',
              StatisticValues: { SampleCount: 4, Sum: 100, Minimum: 10, Maximum: 40 },
            },
            {
              MetricName: 'InvokeDuration',
              Dimensions: dimensions,
              Timestamp: now,
              Unit: 'Milliseconds',
              StatisticValues: { SampleCount: 1, Sum: 50, Minimum: 50, Maximum: 50 },
            },
            { MetricName: 'MessagesDeleted', Dimensions: dimensions, Timestamp: now, Unit: 'Count', Values: [1, 3], Counts: [2, 1] },
          ],
        }),
      );
      const window = { StartTime: new Date(now.getTime() - 5 * 60_000), EndTime: new Date(now.getTime() + 5 * 60_000) };
      const stats = await cw.send(
        new GetMetricStatisticsCommand({
          Namespace: namespace,
          MetricName: 'InvokeDuration',
          Dimensions: dimensions,
          ...window,
          Period: 600,
          Statistics: ['SampleCount', 'Sum', 'Minimum', 'Maximum', 'Average'],
        }),
      );
      assert.equal(stats.Datapoints?.length, 1);
      const [point] = stats.Datapoints ?? [];
      assert.equal(point?.SampleCount, 5);
      assert.equal(point?.Sum, 150);
      assert.equal(point?.Minimum, 10);
      assert.equal(point?.Maximum, 50);
      assert.equal(point?.Average, 30);
      assert.equal(point?.Unit, 'Milliseconds');

      const data = await cw.send(
        new GetMetricDataCommand({
          ...window,
          MetricDataQueries: [
            {
              Id: 'deleted',
              MetricStat: {
                Metric: { Namespace: namespace, MetricName: 'MessagesDeleted', Dimensions: dimensions },
                Period: 600,
                Stat: 'Sum',
              },
            },
            {
              Id: 'samples',
              MetricStat: {
                Metric: { Namespace: namespace, MetricName: 'MessagesDeleted', Dimensions: dimensions },
                Period: 600,
                Stat: 'SampleCount',
              },
            },
          ],
        }),
      );
      const byId = new Map(data.MetricDataResults?.map((r) => [r.Id, r.Values]));
      assert.deepEqual(byId.get('deleted'), [5], 'Values [1,3] with Counts [2,1] sum to 5');
      assert.deepEqual(byId.get('samples'), [3]);
    } finally {
      cw.destroy();
    }
  });
});
