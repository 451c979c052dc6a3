import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DURABLE_NAME_PATTERN, durableExecutionName } from '../../../src/invoke/durable-name.ts';

const ARN = 'arn:aws:sqs:us-east-1:123456789012:orders';
const ID = '059f36b4-87a3-44ab-83d2-661975830a7d';

describe('durableExecutionName', () => {
  it('is the hashed queue ARN and the message id, within 1-64 of [a-zA-Z0-9-_] (Lambda durable idempotency page)', () => {
    const name = durableExecutionName(ARN, ID);
    assert.match(name, DURABLE_NAME_PATTERN);
    assert.equal(name.length, 16 + 1 + 36);
    assert.ok(name.endsWith(`-${ID}`));
  });

  it('never changes: a message received before and after an upgrade keeps its name (known values)', () => {
    assert.equal(durableExecutionName(ARN, ID), 'YEWExb5IQfthcZZw-059f36b4-87a3-44ab-83d2-661975830a7d');
    assert.equal(
      durableExecutionName('arn:aws:sqs:eu-west-1:000000000000:q.fifo', 'x y'),
      'PjEIcbVS7t2m_Knx-hiH_OpqgDM8bAKufnlzXw7a2NgR8LYUMUlfeW9L9qfBk',
    );
  });

  it('is the same on every delivery of a message, and differs between queues and between messages', () => {
    assert.equal(durableExecutionName(ARN, ID), durableExecutionName(ARN, ID));
    const other = durableExecutionName('arn:aws:sqs:us-east-1:123456789012:orders-eu', ID);
    assert.notEqual(other, durableExecutionName(ARN, ID));
    assert.notEqual(durableExecutionName('arn:aws:sqs:us-east-2:123456789012:orders', ID), durableExecutionName(ARN, ID));
    assert.notEqual(durableExecutionName(ARN, ID.replace('a7d', 'a7e')), durableExecutionName(ARN, ID));
  });

  it('hashes a message id that does not fit (too long, or characters a name may not hold)', () => {
    for (const id of ['a'.repeat(48), 'id with spaces', 'id/slash', 'é', '']) {
      const name = durableExecutionName(ARN, id);
      assert.match(name, DURABLE_NAME_PATTERN, id);
      assert.equal(name.length, 16 + 1 + 44);
    }
    assert.notEqual(durableExecutionName(ARN, 'a/b'), durableExecutionName(ARN, 'a_b'));
    // The longest id kept as it is: 47 characters.
    assert.equal(durableExecutionName(ARN, 'a'.repeat(47)).length, 64);
    assert.ok(durableExecutionName(ARN, 'a'.repeat(47)).endsWith('-' + 'a'.repeat(47)));
  });
});
