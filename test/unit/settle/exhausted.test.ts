// Which received messages are not invoked again (src/settle/exhausted.ts). ApproximateReceiveCount grows with
// every receive ("Using dead-letter queues", SQS Developer Guide); a FIFO queue hands out a group's messages in order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { heldBehind, retriesExhausted, splitExhausted } from '../../../src/settle/exhausted.ts';
import { message } from '../../support/factories.ts';

const counted = (id: string, count: number, group?: string) =>
  message({ MessageId: id, Attributes: { ApproximateReceiveCount: String(count), ...(group ? { MessageGroupId: group } : {}) } });
const idsOf = (messages: readonly { MessageId?: string | undefined }[]) => messages.map((m) => m.MessageId);

describe('splitExhausted', () => {
  it('nothing past the allowed receives: undefined, whatever the queue (the last allowed receive is invoked)', () => {
    const batch = [counted('a', 1), counted('b', 2)];
    assert.equal(splitExhausted(batch, false, 2), undefined);
    assert.equal(splitExhausted(batch, true, 2), undefined);
    assert.equal(splitExhausted([], false, 1), undefined);
  });

  it('standard queue: every message received more often than allowed, in batch order; the rest are invoked', () => {
    const split = splitExhausted([counted('a', 3), counted('b', 1), counted('c', 5), counted('d', 2)], false, 2);
    assert.deepEqual(idsOf(split!.exhausted), ['a', 'c']);
    assert.deepEqual(idsOf(split!.invoke), ['b', 'd']);
  });

  it('a message without a receive count counts as received once', () => {
    assert.equal(splitExhausted([message({ MessageId: 'x', Attributes: {} })], false, 1), undefined);
  });

  it('FIFO: per group, the leading run past its receives; a group whose head is not past them is invoked whole', () => {
    const split = splitExhausted(
      [counted('g1-a', 4, 'g1'), counted('g2-a', 1, 'g2'), counted('g1-b', 3, 'g1'), counted('g2-b', 3, 'g2'), counted('g1-c', 1, 'g1')],
      true,
      2,
    );
    assert.deepEqual(idsOf(split!.exhausted), ['g1-a', 'g1-b']);
    // g2-b is past its receives but follows g2-a, which is invoked: it keeps its place behind it.
    assert.deepEqual(idsOf(split!.invoke), ['g2-a', 'g2-b', 'g1-c']);
  });
});

describe('heldBehind', () => {
  const invoke = [counted('g1-c', 1, 'g1'), counted('g2-a', 1, 'g2')];
  it('FIFO: the messages to invoke of a group whose earlier message stays on the queue', () => {
    assert.deepEqual(idsOf(heldBehind(invoke, [counted('g1-a', 3, 'g1')], true)), ['g1-c']);
    assert.deepEqual(heldBehind(invoke, [], true), []);
  });
  it('standard queue: none', () => {
    assert.deepEqual(heldBehind(invoke, [counted('g1-a', 3, 'g1')], false), []);
  });
});

describe('retriesExhausted', () => {
  it('says RetriesExhausted with the receive count and the allowed receives, and no request id', () => {
    assert.deepEqual(retriesExhausted(counted('a', 5), 2), {
      kind: 'retries-exhausted',
      errorType: 'RetriesExhausted',
      errorMessage: 'received 5 times, more than the 2 allowed; not invoked again',
      requestId: undefined,
    });
  });
});
