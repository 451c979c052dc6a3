import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EMPTY_GRACE_MS, QueueSlots, TokenBucket } from '../../../src/receive/queue-limits.ts';

describe('TokenBucket', () => {
  it('starts full, then allows rate tokens a second', () => {
    const b = new TokenBucket(5, 2, 0);
    assert.equal(b.take(0), true);
    assert.equal(b.take(0), true);
    assert.equal(b.take(0), false);
    assert.equal(b.nextAt(0), 200);
    assert.equal(b.take(199), false);
    assert.equal(b.take(200), true);
    assert.equal(b.nextAt(200), 400);
  });

  it('never holds more than burst tokens, however long it idles', () => {
    const b = new TokenBucket(10, 3, 0);
    let taken = 0;
    while (b.take(60_000)) taken++;
    assert.equal(taken, 3);
  });

  it('over a long run, takes at the rate exactly', () => {
    const b = new TokenBucket(7, 1, 0);
    let taken = 0;
    for (let t = 0; t <= 10_000; t++) if (b.take(t)) taken++;
    // The full bucket at 0, then 7 a second for 10 s; the last token lands at 10,000 ms give or take rounding.
    assert.ok(taken === 70 || taken === 71, `took ${taken}`);
  });

  it('a refunded token can be taken again at once, but the bucket never overflows', () => {
    const b = new TokenBucket(1, 1, 0);
    assert.equal(b.take(0), true);
    b.refund(10);
    assert.equal(b.available(10), true);
    b.refund(10);
    assert.equal(b.take(10), true);
    assert.equal(b.take(10), false);
  });

  it('a token taken a little late does not push the next one back (slack below one token)', () => {
    const b = new TokenBucket(10, 1, 0);
    assert.equal(b.take(0), true);
    assert.equal(b.take(105), true);
    assert.equal(b.nextAt(105), 200);
    assert.equal(b.take(106), false, 'never two at once with burst 1');
  });

  it('fractional rates space tokens out', () => {
    const b = new TokenBucket(0.5, 1, 0);
    assert.equal(b.take(0), true);
    assert.equal(b.nextAt(0), 2000);
    assert.equal(b.take(1999), false);
    assert.equal(b.take(2000), true);
  });

  it('rejects a rate of 0 or a burst below 1', () => {
    assert.throws(() => new TokenBucket(0, 1, 0));
    assert.throws(() => new TokenBucket(1, 0.5, 0));
  });
});

describe('QueueSlots', () => {
  it('without limits, admits everything and keeps the order', () => {
    const s = new QueueSlots([undefined, undefined], 2, 0);
    assert.equal(s.active, false);
    for (let k = 0; k < 5; k++) assert.equal(s.acquire(0, 0), true);
    assert.deepEqual(s.prioritise([1, 0], 0), [1, 0]);
    assert.equal(s.nextTokenAt([0, 1], 0), undefined);
  });

  it('maxConcurrency: no more than N holders; a slot given back frees one', () => {
    const s = new QueueSlots([{ maxConcurrency: 2 }, undefined], 10, 0);
    assert.equal(s.acquire(0, 0), true);
    assert.equal(s.acquire(0, 0), true);
    assert.equal(s.acquire(0, 0), false);
    assert.equal(s.admits(1, 0), true, 'other queues are not affected');
    s.giveBack(0, true, 1);
    assert.equal(s.acquire(0, 1), true);
  });

  it('minConcurrency: other queues cannot take the reserved loops while the queue may have messages', () => {
    // 4 loops, low (index 1) reserves 2.
    const s = new QueueSlots([undefined, { minConcurrency: 2 }], 4, 0);
    assert.equal(s.acquire(0, 0), true);
    assert.equal(s.acquire(0, 0), true);
    assert.equal(s.admits(0, 0), false, 'the third loop is reserved for low');
    assert.equal(s.acquire(1, 0), true);
    assert.equal(s.admits(0, 0), false, 'one loop is still reserved');
    assert.equal(s.acquire(1, 0), true);
    assert.equal(s.held(1), 2);
  });

  it('minConcurrency: a queue below its minimum is tried first, ahead of strict order', () => {
    const s = new QueueSlots([undefined, { minConcurrency: 2 }], 6, 0);
    assert.deepEqual(s.prioritise([0, 1], 0), [1, 0]);
    s.acquire(1, 0);
    assert.deepEqual(s.prioritise([0, 1], 0), [1, 0]);
    s.acquire(1, 0);
    assert.deepEqual(s.prioritise([0, 1], 0), [0, 1], 'at its minimum it takes its place in the order again');
  });

  it('minConcurrency: a queue that was just found empty reserves nothing and is not tried first, for EMPTY_GRACE_MS', () => {
    const s = new QueueSlots([undefined, { minConcurrency: 2 }], 3, 0);
    assert.equal(s.acquire(1, 0), true);
    s.giveBack(1, false, 0); // its receive returned nothing
    assert.deepEqual(s.prioritise([0, 1], 10), [0, 1]);
    assert.equal(s.acquire(0, 10), true);
    assert.equal(s.acquire(0, 10), true);
    assert.equal(s.acquire(0, 10), true, 'every loop may serve the other queue while low is empty');
    assert.deepEqual(s.prioritise([0, 1], EMPTY_GRACE_MS), [1, 0], 'then it is tried first again');
    s.giveBack(0, true, EMPTY_GRACE_MS);
    assert.equal(s.admits(0, EMPTY_GRACE_MS), false, 'and its minimum is reserved again');
    assert.equal(s.admits(1, EMPTY_GRACE_MS), true);
  });

  it('rate: a queue without a token is not admitted; a receive that found nothing refunds its token', () => {
    const s = new QueueSlots([{ ratePerSec: 2 }], 5, 0);
    assert.equal(s.acquire(0, 0), true);
    assert.equal(s.admits(0, 0), false);
    assert.equal(s.nextTokenAt([0], 0), 500);
    s.giveBack(0, false, 100);
    assert.equal(s.acquire(0, 100), true, 'refunded');
    s.giveBack(0, true, 200);
    assert.equal(s.admits(0, 200), false, 'a received batch spends its token');
    assert.equal(s.admits(0, 600), true);
  });

  it('a rate-limited queue without a token reserves nothing for its minimum', () => {
    const s = new QueueSlots([undefined, { minConcurrency: 1, ratePerSec: 1 }], 2, 0);
    assert.equal(s.acquire(1, 0), true);
    s.giveBack(1, true, 10);
    assert.equal(s.acquire(0, 10), true);
    assert.equal(s.acquire(0, 10), true, 'low has no token: its reserved loop is not held idle');
  });

  it('a slot given back below zero is ignored', () => {
    const s = new QueueSlots([{ maxConcurrency: 1 }], 1, 0);
    s.giveBack(0, true, 0);
    assert.equal(s.held(0), 0);
    assert.equal(s.acquire(0, 0), true);
  });
  it('a parked batch frees its slot; it takes one back only under maxConcurrency; at most twice the max in all', () => {
    const s = new QueueSlots([{ maxConcurrency: 2 }], 10, 0);
    assert.equal(s.acquire(0, 0), true);
    assert.equal(s.acquire(0, 0), true);
    assert.equal(s.admits(0, 0), false);
    s.park(0);
    assert.deepEqual([s.held(0), s.parked(0)], [1, 1]);
    assert.equal(s.acquire(0, 0), true, 'the parked slot serves a healthy batch');
    assert.equal(s.unpark(0), false, 'two active: the parked batch waits');
    s.park(0);
    s.park(0);
    assert.deepEqual([s.held(0), s.parked(0)], [0, 3]);
    assert.equal(s.acquire(0, 0), true);
    assert.equal(s.admits(0, 0), false, '1 active + 3 parked = twice the max: no new receive');
    assert.equal(s.unpark(0), true, 'but a parked batch may come back');
    s.giveBack(0, true, 0, true); // a parked batch ended while waiting
    assert.deepEqual([s.held(0), s.parked(0)], [2, 1]);
  });

  it("parked batches count towards their queue minimum: their loops are that queue's", () => {
    const s = new QueueSlots([undefined, { minConcurrency: 2 }], 3, 0);
    assert.equal(s.acquire(1, 0), true);
    assert.equal(s.acquire(1, 0), true);
    s.park(1);
    s.park(1);
    assert.equal(s.acquire(0, 0), true, 'the third loop is free for queue 0');
    assert.equal(s.admits(0, 0), false, 'three loops busy');
  });
});
