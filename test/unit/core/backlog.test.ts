import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agesAtReceive, backlogOf } from '../../../src/core/backlog.ts';

describe('queue backlog', () => {
  it("reads SQS's three approximate counts, and nothing when one is missing or not a count", () => {
    assert.deepEqual(
      backlogOf({ ApproximateNumberOfMessages: '12', ApproximateNumberOfMessagesNotVisible: '3', ApproximateNumberOfMessagesDelayed: '0' }),
      { visible: 12, notVisible: 3, delayed: 0 },
    );
    assert.equal(backlogOf({ ApproximateNumberOfMessages: '12', ApproximateNumberOfMessagesNotVisible: '3' }), undefined);
    assert.equal(
      backlogOf({ ApproximateNumberOfMessages: '-1', ApproximateNumberOfMessagesNotVisible: '3', ApproximateNumberOfMessagesDelayed: '0' }),
      undefined,
    );
  });

  it('ages at receive from SentTimestamp; a clock behind SQS gives 0, a message without it no age', () => {
    const msg = (sent?: string) => ({ MessageId: 'm', ...(sent === undefined ? {} : { Attributes: { SentTimestamp: sent } }) });
    assert.deepEqual(agesAtReceive([msg('1000'), msg('4000'), msg('6000'), msg()], 5_000), [4_000, 1_000, 0]);
  });
});
