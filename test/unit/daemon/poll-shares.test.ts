import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PollShares } from '../../../src/daemon/poll-shares.ts';

describe('PollShares: the routes share the budget by the queues they have now', () => {
  it('while the queues fit, every route gets one poll per queue (at least one)', () => {
    const shares = new PollShares(874);
    const a = shares.route();
    const b = shares.route();
    a.set(3);
    assert.equal(a.max(), 3);
    assert.equal(b.max(), 1, 'no queues yet (found by prefix later): one');
  });

  it('beyond the budget, each route in proportion to its queues of the moment, and the warning once per crossing', () => {
    const warned: { queues: number; polls: number }[] = [];
    const shares = new PollShares(874, (short) => warned.push(short));
    const a = shares.route();
    const b = shares.route();
    a.set(9_000);
    b.set(1_000);
    assert.equal(a.max(), 786);
    assert.equal(b.max(), 87);
    assert.deepEqual(warned, [{ queues: 9_000, polls: 874 }], 'told when the first route outgrew the budget');
    a.set(100);
    assert.deepEqual([a.max(), b.max()], [79, 794], 'queues found by prefix vanished: the shares follow (1,100 queues, 874 polls)');
    a.set(0);
    b.set(500);
    assert.equal(b.max(), 500);
    b.set(2_000);
    assert.deepEqual(
      warned,
      [
        { queues: 9_000, polls: 874 },
        { queues: 2_000, polls: 874 },
      ],
      'a second crossing warns again',
    );
  });

  it('a route found with no queue at start-up gets the budget once its queues are found', () => {
    const shares = new PollShares(19_000);
    const route = shares.route();
    route.set(0);
    route.set(10_000);
    assert.equal(route.max(), 10_000);
  });
});
