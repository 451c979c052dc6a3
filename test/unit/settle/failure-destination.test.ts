import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  allowedReceives,
  DEDUPLICATION_ATTRIBUTE,
  deduplicationKey,
  destinationMessage,
  failureRecord,
  maxReceiveCountOf,
  parseDestination,
  pickForDestination,
  type FailureReason,
} from '../../../src/settle/failure-destination.ts';
import { TEXT_CAP_BYTES } from '../../../src/util/cap-text.ts';
import { message, queue } from '../../support/factories.ts';

const counted = (id: string, count: number, group?: string) =>
  message({
    MessageId: id,
    Attributes: { ApproximateReceiveCount: String(count), SentTimestamp: '1545082649183', ...(group ? { MessageGroupId: group } : {}) },
  });

describe('parseDestination', () => {
  it('takes an SQS queue URL or an SNS topic ARN; FIFO from the name', () => {
    assert.deepEqual(parseDestination('https://sqs.eu-west-1.amazonaws.com/123456789012/failures'), {
      kind: 'sqs',
      url: 'https://sqs.eu-west-1.amazonaws.com/123456789012/failures',
      fifo: false,
    });
    assert.deepEqual(parseDestination(' http://127.0.0.1:4566/000000000000/f.fifo '), {
      kind: 'sqs',
      url: 'http://127.0.0.1:4566/000000000000/f.fifo',
      fifo: true,
    });
    assert.deepEqual(parseDestination('arn:aws:sns:us-east-1:123456789012:failures'), {
      kind: 'sns',
      arn: 'arn:aws:sns:us-east-1:123456789012:failures',
      fifo: false,
    });
    assert.deepEqual(parseDestination('arn:aws-us-gov:sns:us-gov-west-1:123456789012:f.fifo'), {
      kind: 'sns',
      arn: 'arn:aws-us-gov:sns:us-gov-west-1:123456789012:f.fifo',
      fifo: true,
    });
  });

  it('refuses anything else: a queue name, an SQS ARN, a topic without account, a URL without a queue', () => {
    for (const bad of [
      'failures',
      'arn:aws:sqs:us-east-1:123456789012:failures',
      'arn:aws:sns:us-east-1:failures',
      'https://sqs.eu-west-1.amazonaws.com/',
      'ftp://host/1/q',
      'https://host/123/q q',
      '',
    ]) {
      assert.equal(parseDestination(bad), undefined, bad);
    }
  });
});

describe('maxReceiveCountOf / allowedReceives', () => {
  it("reads the RedrivePolicy's maxReceiveCount as a number or a string; none without a usable one", () => {
    assert.equal(maxReceiveCountOf('{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:1:dlq","maxReceiveCount":5}'), 5);
    assert.equal(maxReceiveCountOf('{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:1:dlq","maxReceiveCount":"3"}'), 3);
    for (const none of [undefined, '', '{}', 'not json', '{"maxReceiveCount":0}', '{"maxReceiveCount":"x"}', '{"maxReceiveCount":1.5}']) {
      assert.equal(maxReceiveCountOf(none), undefined, String(none));
    }
  });

  it("the queue's maxReceiveCount comes before --max-attempts", () => {
    assert.equal(allowedReceives(5, 2), 5);
    assert.equal(allowedReceives(undefined, 2), 2);
    assert.equal(allowedReceives(undefined, undefined), undefined);
  });
});

describe('pickForDestination', () => {
  it('standard queue: the failed messages whose receive count reached the limit', () => {
    const kept = [counted('a', 3), counted('b', 2), counted('c', 4), counted('d', 3)];
    assert.deepEqual(
      pickForDestination(kept, new Set(['a', 'b', 'c']), false, 3).map((m) => m.MessageId),
      ['a', 'c'],
    );
  });

  it('FIFO: only a leading run of each group, and never a message kept unprocessed behind a failure', () => {
    const kept = [counted('a1', 3, 'a'), counted('b1', 3, 'b'), counted('a2', 2, 'a'), counted('a3', 3, 'a'), counted('b2', 3, 'b')];
    // a1 goes; a2 is not on its last receive, so a3 must wait behind it; b1 failed and goes, b2 was not processed.
    assert.deepEqual(
      pickForDestination(kept, new Set(['a1', 'a2', 'a3', 'b1']), true, 3).map((m) => m.MessageId),
      ['a1', 'b1'],
    );
  });
});

describe('failureRecord', () => {
  const q = queue('orders');
  const reason: FailureReason = { kind: 'function-error', errorType: 'TypeError', errorMessage: 'x is undefined', requestId: 'req-1' };

  it('holds the reason, the attempts, the function, the request id, the timestamps and the event record', () => {
    const m = message({
      MessageId: 'm-1',
      Body: 'hello',
      Attributes: { ApproximateReceiveCount: '5', SentTimestamp: '1545082649183', ApproximateFirstReceiveTimestamp: '1545082649185' },
    });
    const record = failureRecord(m, q, reason, { functionName: 'fn:live', maxAttempts: 5, nowMs: Date.UTC(2026, 10, 24, 20) });
    assert.deepEqual(
      { ...record, record: undefined },
      {
        version: '1.0',
        timestamp: '2026-11-24T20:00:00.000Z',
        condition: 'RetriesExhausted',
        function: 'fn:live',
        requestId: 'req-1',
        attempts: 5,
        maxAttempts: 5,
        error: { kind: 'function-error', errorType: 'TypeError', errorMessage: 'x is undefined' },
        sentAt: '2018-12-17T21:37:29.183Z',
        firstReceivedAt: '2018-12-17T21:37:29.185Z',
        queue: { name: 'orders', arn: q.arn },
        record: undefined,
      },
    );
    assert.equal(record.record.messageId, 'm-1');
    assert.equal(record.record.body, 'hello');
    assert.equal(record.record.eventSourceARN, q.arn);
    assert.equal(record.record.awsRegion, q.region);
  });

  it('caps errorType and errorMessage (text from the function) at 1 KiB', () => {
    const huge = `card 4111 1111 1111 1111 ${'x'.repeat(1_000_000)} MARKER`;
    const record = failureRecord(
      counted('m', 1),
      q,
      { ...reason, errorType: huge, errorMessage: huge },
      { functionName: 'fn', maxAttempts: 1, nowMs: 0 },
    );
    for (const text of [record.error.errorType, record.error.errorMessage]) {
      assert.ok(Buffer.byteLength(text) < TEXT_CAP_BYTES + 40, `${Buffer.byteLength(text)} bytes`);
      assert.ok(!text.includes('MARKER'));
    }
  });

  it('has exactly the fields deploy/schemas/failure-record.schema.json requires, nested too', () => {
    const schema = JSON.parse(readFileSync(new URL('../../../deploy/schemas/failure-record.schema.json', import.meta.url), 'utf8')) as {
      required: string[];
      properties: Record<string, { required?: string[] }>;
    };
    const m = message({ MessageAttributes: { a: { DataType: 'String', StringValue: 'v' } }, MD5OfMessageAttributes: 'md5' });
    const record = failureRecord(m, q, { ...reason, requestId: undefined }, { functionName: 'fn', maxAttempts: 1, nowMs: 0 });
    assert.deepEqual(Object.keys(record).sort(), [...schema.required].sort());
    for (const key of ['error', 'queue', 'record'] as const) {
      assert.deepEqual(Object.keys(record[key]).sort(), [...(schema.properties[key]?.required ?? [])].sort(), key);
    }
    assert.equal(record.requestId, null);
  });
});

describe('destinationMessage', () => {
  const q = queue('src.fifo');
  const reason: FailureReason = { kind: 'item-failure', errorType: 'BatchItemFailure', errorMessage: '', requestId: 'r' };
  const record = (m = counted('m-7', 3, 'g1')) => failureRecord(m, q, reason, { functionName: 'fn', maxAttempts: 3, nowMs: 0 });

  it('a FIFO destination gets the source group, and the key of the source queue and message id as deduplication id', () => {
    const out = destinationMessage(record(), { kind: 'sqs', url: 'http://h/1/d.fifo', fifo: true });
    assert.equal(out.groupId, 'g1');
    assert.equal(out.deduplicationId, createHash('sha256').update(`${q.arn}\nm-7`).digest('hex'));
    assert.deepEqual(out.attributes, { [DEDUPLICATION_ATTRIBUTE]: out.deduplicationId });
    assert.equal((JSON.parse(out.body) as { record: { messageId: string } }).record.messageId, 'm-7');
  });

  it('the deduplication key: the same for every record of a message, different across messages and queues, and a valid MessageDeduplicationId', () => {
    const key = deduplicationKey(q.arn, 'm-7');
    assert.equal(
      destinationMessage(record(), { kind: 'sqs', url: 'http://h/1/d', fifo: false }).attributes?.[DEDUPLICATION_ATTRIBUTE],
      key,
    );
    assert.equal(deduplicationKey(q.arn, 'm-7'), key);
    assert.notEqual(deduplicationKey(q.arn, 'm-8'), key);
    assert.notEqual(deduplicationKey(queue('other').arn, 'm-7'), key);
    // SendMessage API reference: MessageDeduplicationId, up to 128 alphanumeric and punctuation characters.
    assert.match(key, /^[0-9a-f]{64}$/);
    // SQS Developer Guide, message attributes: letters, digits, _ - . ; no AWS. or Amazon. prefix; at most 256.
    assert.match(DEDUPLICATION_ATTRIBUTE, /^(?!AWS\.|Amazon\.)[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}[A-Za-z0-9_-]$/i);
  });

  it('a standard source without a group: the source queue name as group; a standard destination gets neither id, only the key', () => {
    const plain = record(counted('m-8', 3));
    assert.equal(
      destinationMessage(plain, { kind: 'sns', arn: 'arn:aws:sns:us-east-1:123456789012:t.fifo', fifo: true }).groupId,
      'src.fifo',
    );
    const std = destinationMessage(plain, { kind: 'sqs', url: 'http://h/1/d', fifo: false });
    assert.deepEqual(Object.keys(std), ['body', 'attributes']);
    assert.deepEqual(std.attributes, { [DEDUPLICATION_ATTRIBUTE]: deduplicationKey(q.arn, 'm-8') });
  });
});
