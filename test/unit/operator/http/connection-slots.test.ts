import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionSlots } from '../../../../src/operator/http/connection-slots.ts';

/** Slots holding `keys`, admitted in this order. */
function full(max: number, keys: readonly string[]): ConnectionSlots<string> {
  const slots = new ConnectionSlots<string>(max);
  for (const k of keys) assert.deepEqual(slots.admit(k), { admit: true });
  return slots;
}

describe('ConnectionSlots: who makes room when the HTTP server is full', () => {
  it('admits without closing anything below the maximum', () => {
    const slots = full(3, ['a', 'b']);
    assert.deepEqual(slots.admit('c'), { admit: true });
    assert.equal(slots.size, 3);
  });

  it('when full, closes the connection that has waited longest without a complete request, not the newcomer', () => {
    const slots = full(3, ['a', 'b', 'c']);
    assert.deepEqual(slots.admit('d'), { admit: true, evict: 'a' });
    assert.deepEqual(slots.admit('e'), { admit: true, evict: 'b' });
    assert.equal(slots.size, 3);
  });

  it('closes a connection idle between requests only when none is waiting, the one idle longest first', () => {
    const slots = full(3, ['a', 'b', 'c']);
    for (const k of ['a', 'b']) {
      slots.requestStarted(k);
      slots.requestEnded(k);
    }
    // b asks again and is answered: a has now been idle longest.
    slots.requestStarted('b');
    slots.requestEnded('b');
    assert.deepEqual(slots.admit('d'), { admit: true, evict: 'c' }, 'the waiting one first');
    slots.requestStarted('d');
    assert.deepEqual(slots.admit('e'), { admit: true, evict: 'a' });
  });

  it('never closes a connection with a request in flight: when every place has one, the newcomer is refused', () => {
    const slots = full(2, ['a', 'b']);
    slots.requestStarted('a');
    // Two pipelined requests on b: it is busy until both answers have ended.
    slots.requestStarted('b');
    slots.requestStarted('b');
    assert.deepEqual(slots.admit('c'), { admit: false });
    slots.requestEnded('b');
    assert.deepEqual(slots.admit('c'), { admit: false });
    slots.requestEnded('b');
    assert.deepEqual(slots.admit('c'), { admit: true, evict: 'b' });
  });

  it('a closed connection frees its place; events for a connection it no longer holds change nothing', () => {
    const slots = full(2, ['a', 'b']);
    slots.remove('a');
    slots.requestStarted('a');
    slots.requestEnded('a');
    assert.equal(slots.size, 1);
    assert.deepEqual(slots.admit('c'), { admit: true });
    assert.equal(slots.size, 2);
  });
});
