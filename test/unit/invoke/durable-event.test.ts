import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '@aws-sdk/client-sqs';
import { MAX_ASYNC_PAYLOAD_BYTES, durableEvent, durableInvocations } from '../../../src/invoke/durable-event.ts';
import { durableExecutionName } from '../../../src/invoke/durable-name.ts';
import { MAX_SYNC_PAYLOAD_BYTES, toRecord } from '../../../src/invoke/sqs-event.ts';

const queue = { arn: 'arn:aws:sqs:us-east-1:123456789012:orders', region: 'us-east-1' };

/** One message as SQS hands it out on its `receive`-th receive. */
function delivery(receive: number, body = '{"order":1}'): Message {
  return {
    MessageId: '059f36b4-87a3-44ab-83d2-661975830a7d',
    ReceiptHandle: `AQEB-receipt-${receive}`,
    Body: body,
    MD5OfBody: 'md5',
    Attributes: {
      ApproximateReceiveCount: String(receive),
      ApproximateFirstReceiveTimestamp: '1700000000100',
      SentTimestamp: '1700000000000',
      SenderId: 'AIDA',
    },
    MessageAttributes: { tenant: { DataType: 'String', StringValue: 'acme' } },
    MD5OfMessageAttributes: 'md5attrs',
  };
}

describe('durableEvent', () => {
  it('is the same bytes on every delivery of a message (Lambda compares payloads under one execution name)', () => {
    assert.equal(durableEvent(delivery(1), queue), durableEvent(delivery(2), queue));
    assert.equal(durableEvent(delivery(1), queue), durableEvent(delivery(37), queue));
  });

  it("is the trigger's record less the receipt handle and ApproximateReceiveCount", () => {
    const event = JSON.parse(durableEvent(delivery(3), queue)) as { Records: Record<string, unknown>[] };
    assert.equal(event.Records.length, 1);
    const trigger = toRecord(delivery(3), queue);
    const { ApproximateReceiveCount: _count, ...attributes } = trigger.attributes;
    assert.deepEqual(event.Records[0], { ...trigger, receiptHandle: '', attributes });
    assert.deepEqual(attributes, { ApproximateFirstReceiveTimestamp: '1700000000100', SentTimestamp: '1700000000000', SenderId: 'AIDA' });
  });

  it('differs when the message does (another body)', () => {
    assert.notEqual(durableEvent(delivery(1, 'a'), queue), durableEvent(delivery(1, 'b'), queue));
  });
});

describe('durableInvocations', () => {
  it('one invocation per message, each under its own name; async sends Event', () => {
    const a = { ...delivery(1), MessageId: 'a' };
    const b = { ...delivery(1), MessageId: 'b' };
    const out = durableInvocations([a, b], queue, 'async');
    assert.deepEqual(
      out.map((i) => [i.message.MessageId, i.params]),
      [
        ['a', { durableExecutionName: durableExecutionName(queue.arn, 'a'), async: true }],
        ['b', { durableExecutionName: durableExecutionName(queue.arn, 'b'), async: true }],
      ],
    );
    assert.equal(durableInvocations([a], queue, 'sync')[0]!.params.async, false);
  });

  it("holds each payload to its invocation type's limit: 1 MB async, 6 MB sync (Lambda quotas page)", () => {
    assert.equal(MAX_ASYNC_PAYLOAD_BYTES, 1_048_576);
    // A 1 MiB SQS message (the most SQS takes since August 2025) does not fit an Event invoke with its record around it.
    const big = delivery(1, 'x'.repeat(1024 * 1024 - 200));
    const [async] = durableInvocations([big], queue, 'async');
    assert.ok(async!.bytes > async!.limitBytes);
    assert.equal(async!.limitBytes, MAX_ASYNC_PAYLOAD_BYTES);
    assert.equal(async!.bytes, Buffer.byteLength(async!.payload));
    const [sync] = durableInvocations([big], queue, 'sync');
    assert.equal(sync!.limitBytes, MAX_SYNC_PAYLOAD_BYTES);
    assert.ok(sync!.bytes <= sync!.limitBytes);
    const [small] = durableInvocations([delivery(1)], queue, 'async');
    assert.ok(small!.bytes <= small!.limitBytes);
  });
});
