// What the steps read of a received message (src/core/message.ts).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupsOf, messageGroupOf, messageIdOf } from '../../../src/core/message.ts';
import { message } from '../../support/factories.ts';

describe('messageGroupOf', () => {
  it("is the message's MessageGroupId, '' on a standard queue", () => {
    assert.equal(messageGroupOf(message({ Attributes: { MessageGroupId: 'g1' } })), 'g1');
    assert.equal(messageGroupOf(message({ Attributes: {} })), '');
    assert.equal(messageGroupOf(message({ Attributes: undefined })), '');
  });
});

describe('groupsOf', () => {
  it('keeps each group in its order, the groups in the order of their first message', () => {
    const [a1, b1, a2, n, b2] = ['a', 'b', 'a', undefined, 'b'].map((g) =>
      message(g === undefined ? {} : { Attributes: { MessageGroupId: g } }),
    );
    assert.deepEqual(groupsOf([a1!, b1!, a2!, n!, b2!]), [[a1, a2], [b1, b2], [n]]);
    assert.deepEqual(groupsOf([]), []);
  });
});

describe('messageIdOf', () => {
  it("is the message's MessageId, '' without one", () => {
    assert.equal(messageIdOf(message({ MessageId: 'm-1' })), 'm-1');
    assert.equal(messageIdOf(message({ MessageId: undefined })), '');
  });
});
