import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildSqsEvents, toRecord } from '../../../src/invoke/sqs-event.ts';
import { SQS_RECORD_KEYS } from '../../support/factories.ts';

const queue = { arn: 'arn:aws:sqs:us-east-2:123456789012:my-queue', region: 'us-east-2' };

describe('toRecord', () => {
  it('builds the exact AWS record for the documented example (md5 recomputed when SQS omits it)', () => {
    const record = toRecord(
      {
        MessageId: '059f36b4-87a3-44ab-83d2-661975830a7d',
        ReceiptHandle: 'AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a...',
        Body: 'Test message.',
        Attributes: {
          ApproximateReceiveCount: '1',
          SentTimestamp: '1545082649183',
          SenderId: 'AIDAIENQZJOLO23YVJ4VO',
          ApproximateFirstReceiveTimestamp: '1545082649185',
        },
      },
      queue,
    );
    assert.deepEqual(record, {
      messageId: '059f36b4-87a3-44ab-83d2-661975830a7d',
      receiptHandle: 'AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a...',
      body: 'Test message.',
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: '1545082649183',
        SenderId: 'AIDAIENQZJOLO23YVJ4VO',
        ApproximateFirstReceiveTimestamp: '1545082649185',
      },
      messageAttributes: {},
      md5OfMessageAttributes: null,
      md5OfBody: 'e4e68fb7bd0e697a0ae8f1bb342846b3',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-2:123456789012:my-queue',
      awsRegion: 'us-east-2',
    });
    // Key order matches AWS's, which matters to anyone diffing payloads.
    assert.deepEqual(Object.keys(record), SQS_RECORD_KEYS);
  });

  it('keeps the md5 SQS computed and every FIFO and optional attribute as strings', () => {
    const record = toRecord(
      {
        MessageId: 'id',
        ReceiptHandle: 'rh',
        Body: '{"a":1}',
        MD5OfBody: 'from-sqs',
        Attributes: {
          ApproximateReceiveCount: '2',
          SequenceNumber: '18849496460467696128',
          MessageGroupId: 'g1',
          MessageDeduplicationId: 'd1',
          AWSTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793',
          DeadLetterQueueSourceArn: 'arn:aws:sqs:us-east-2:123456789012:src',
        },
      },
      queue,
    );
    assert.equal(record.md5OfBody, 'from-sqs');
    assert.deepEqual(record.attributes, {
      ApproximateReceiveCount: '2',
      SequenceNumber: '18849496460467696128',
      MessageGroupId: 'g1',
      MessageDeduplicationId: 'd1',
      AWSTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793',
      DeadLetterQueueSourceArn: 'arn:aws:sqs:us-east-2:123456789012:src',
    });
  });

  it('turns message attributes into Lambda camelCase form with base64 binaries and empty lists', () => {
    const record = toRecord(
      {
        MessageId: 'id',
        ReceiptHandle: 'rh',
        Body: 'b',
        MD5OfMessageAttributes: 'abc123',
        MessageAttributes: {
          s: { DataType: 'String', StringValue: 'hello' },
          n: { DataType: 'Number', StringValue: '42' },
          b: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 1, 2, 255]) },
          c: { DataType: 'String.custom', StringValue: 'x' },
        },
      },
      queue,
    );
    assert.equal(record.md5OfMessageAttributes, 'abc123');
    assert.deepEqual(record.messageAttributes, {
      s: { stringValue: 'hello', stringListValues: [], binaryListValues: [], dataType: 'String' },
      n: { stringValue: '42', stringListValues: [], binaryListValues: [], dataType: 'Number' },
      b: { binaryValue: 'AAEC/w==', stringListValues: [], binaryListValues: [], dataType: 'Binary' },
      c: { stringValue: 'x', stringListValues: [], binaryListValues: [], dataType: 'String.custom' },
    });
  });

  it('handles an empty body', () => {
    const record = toRecord({ MessageId: 'id', ReceiptHandle: 'rh', Body: '' }, queue);
    assert.equal(record.md5OfBody, 'd41d8cd98f00b204e9800998ecf8427e');
    assert.deepEqual(record.attributes, {});
  });
});

describe('buildSqsEvents', () => {
  it('puts a batch in one event in receive order', () => {
    const messages = [1, 2, 3].map((i) => ({ MessageId: `m${i}`, ReceiptHandle: `r${i}`, Body: `b${i}` }));
    const events = buildSqsEvents(messages, queue);
    assert.equal(events.length, 1);
    assert.deepEqual(
      events[0]!.event.Records.map((r) => r.messageId),
      ['m1', 'm2', 'm3'],
    );
    assert.deepEqual(JSON.parse(events[0]!.payload), events[0]!.event);
  });

  it('splits a batch so that no payload exceeds the synchronous invoke limit', () => {
    const big = 'x'.repeat(1024 * 1024); // 1 MiB, the largest SQS message
    const messages = Array.from({ length: 10 }, (_, i) => ({ MessageId: `m${i}`, ReceiptHandle: `r${i}`, Body: big }));
    const events = buildSqsEvents(messages, queue);
    assert.ok(events.length >= 2);
    for (const e of events) assert.ok(Buffer.byteLength(e.payload) <= 6 * 1024 * 1024, `payload ${Buffer.byteLength(e.payload)}`);
    assert.deepEqual(
      events.flatMap((e) => e.messages.map((m) => m.MessageId)),
      messages.map((m) => m.MessageId),
    );
    assert.deepEqual(
      events.map((e) => e.event.Records.length),
      [5, 5],
    );
  });
});
