import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PollShares, pollBudget } from '../../../src/daemon/poll-budget.ts';

describe('pollBudget: idle long polls in flight, as far as the open-file limit allows', () => {
  it('a 20,000 limit at --concurrency 10 leaves room for 10,000 queues, one poll each', () => {
    assert.ok(pollBudget({ openFileLimit: 20_000, loops: 10, httpServer: true }) >= 10_000);
  });

  it('the polls get what is left after the loops, the HTTP server and the reserve', () => {
    // 1,024 - 64 reserved - 33 HTTP - 1 CloudWatch - 2 x 26 loop sockets = 874.
    assert.equal(pollBudget({ openFileLimit: 1_024, loops: 10, httpServer: true }), 874);
    assert.equal(pollBudget({ openFileLimit: 1_024, loops: 10, httpServer: false }), 907);
  });

  it('at least one, even below what the loops need (the start-up warns of that), and no cap when the limit is unknown', () => {
    assert.equal(pollBudget({ openFileLimit: 100, loops: 10, httpServer: true }), 1);
    assert.equal(pollBudget({ openFileLimit: undefined, loops: 10, httpServer: true }), Infinity);
  });
});

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
