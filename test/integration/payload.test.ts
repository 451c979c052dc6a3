import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { createQueue, sqsClient } from '../support/aws.ts';
import { startDaemon, started, stopDaemon } from '../support/daemon.ts';
import { SQS_RECORD_KEYS } from '../support/factories.ts';
import { functionFixture } from '../support/functions.ts';
import { startLambdaEndpoint, type LambdaEndpoint } from '../support/lambda-endpoint/server.ts';

const md5 = (s: string) => createHash('md5').update(s, 'utf8').digest('hex');

interface Rec {
  [key: string]: unknown;
  attributes: Record<string, unknown>;
}

describe('the payload a function receives (LocalStack SQS -> workerless -> Lambda endpoint)', () => {
  let endpoint: LambdaEndpoint;
  const sqs = sqsClient();
  before(async () => {
    endpoint = await startLambdaEndpoint({ functions: { record: { handler: functionFixture('record.mjs') } } });
  });
  after(async () => {
    await endpoint.stop();
    sqs.destroy();
  });

  it('standard queue: every field of the AWS record, with string, number and binary attributes', async () => {
    const q = await createQueue('wl-payload');
    const body = 'Test message.';
    const sent = await sqs.send(
      new SendMessageCommand({
        QueueUrl: q.url,
        MessageBody: body,
        MessageAttributes: {
          city: { DataType: 'String', StringValue: 'Any City' },
          count: { DataType: 'Number', StringValue: '42' },
          blob: { DataType: 'Binary', BinaryValue: Buffer.from([0, 1, 2, 250, 255]) },
        },
      }),
    );
    const plain = await sqs.send(new SendMessageCommand({ QueueUrl: q.url, MessageBody: '{"plain":true}' }));
    const daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', q.name, '--batch-size', '10']);
    await started(daemon);
    const invocations = await endpoint.waitFor((inv) => inv.flatMap(records).length >= 2, 20_000);
    assert.equal(await stopDaemon(daemon), 0);

    const all = invocations.flatMap(records);
    const rec = all.find((r) => r['messageId'] === sent.MessageId)!;
    assert.ok(rec, 'the message with attributes was delivered');
    assert.deepEqual(Object.keys(rec), SQS_RECORD_KEYS);
    assert.equal(rec['body'], body);
    assert.equal(typeof rec['receiptHandle'], 'string');
    assert.ok((rec['receiptHandle'] as string).length > 0);
    assert.equal(rec['md5OfBody'], 'e4e68fb7bd0e697a0ae8f1bb342846b3');
    assert.equal(rec['md5OfBody'], sent.MD5OfMessageBody);
    assert.equal(rec['md5OfMessageAttributes'], sent.MD5OfMessageAttributes);
    assert.equal(rec['eventSource'], 'aws:sqs');
    assert.equal(rec['eventSourceARN'], q.arn);
    assert.equal(rec['awsRegion'], 'us-east-1');
    assert.deepEqual(rec['messageAttributes'], {
      city: { stringValue: 'Any City', stringListValues: [], binaryListValues: [], dataType: 'String' },
      count: { stringValue: '42', stringListValues: [], binaryListValues: [], dataType: 'Number' },
      blob: {
        binaryValue: Buffer.from([0, 1, 2, 250, 255]).toString('base64'),
        stringListValues: [],
        binaryListValues: [],
        dataType: 'Binary',
      },
    });
    for (const key of ['ApproximateReceiveCount', 'SentTimestamp', 'SenderId', 'ApproximateFirstReceiveTimestamp']) {
      assert.equal(typeof rec.attributes[key], 'string', `attributes.${key} is a string`);
    }
    assert.equal(rec.attributes['ApproximateReceiveCount'], '1');
    assert.match(rec.attributes['SentTimestamp'] as string, /^\d{13}$/);
    for (const v of Object.values(rec.attributes)) assert.equal(typeof v, 'string');

    const plainRec = all.find((r) => r['messageId'] === plain.MessageId)!;
    assert.deepEqual(plainRec['messageAttributes'], {});
    assert.equal(plainRec['md5OfMessageAttributes'], null);
    assert.equal(plainRec['md5OfBody'], md5('{"plain":true}'));
  });

  it('FIFO queue: SequenceNumber, MessageGroupId and MessageDeduplicationId, in group order', async () => {
    const q = await createQueue('wl-payload.fifo');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await sqs.send(
        new SendMessageCommand({ QueueUrl: q.url, MessageBody: `fifo-${i}`, MessageGroupId: 'g1', MessageDeduplicationId: `d-${i}` }),
      );
      ids.push(r.MessageId!);
    }
    const daemon = startDaemon(endpoint.url, ['--function', 'record', '--queues', q.name]);
    await started(daemon);
    const invocations = await endpoint.waitFor(
      (inv) => inv.flatMap(records).filter((r) => ids.includes(r['messageId'] as string)).length >= 3,
      20_000,
    );
    assert.equal(await stopDaemon(daemon), 0);
    const got = invocations.flatMap(records).filter((r) => ids.includes(r['messageId'] as string));
    assert.deepEqual(
      got.map((r) => r['body']),
      ['fifo-0', 'fifo-1', 'fifo-2'],
    );
    got.forEach((r, i) => {
      assert.equal(r.attributes['MessageGroupId'], 'g1');
      assert.equal(r.attributes['MessageDeduplicationId'], `d-${i}`);
      assert.match(r.attributes['SequenceNumber'] as string, /^\d+$/);
      assert.equal(r['eventSourceARN'], q.arn);
    });
  });
});

function records(inv: { payload: unknown }): Rec[] {
  return (inv.payload as { Records?: Rec[] } | null)?.Records ?? [];
}
