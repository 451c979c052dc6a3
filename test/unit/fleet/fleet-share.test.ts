// The fleet's budget (src/fleet/fleet-share.ts): the replicas' shares of --fleet-concurrency add up to it exactly,
// differ by at most 1, are the same in every replica, and never pass --concurrency.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fleetShare } from '../../../src/fleet/fleet-share.ts';

const shares = (total: number, members: readonly string[], cap = Number.MAX_SAFE_INTEGER): number[] =>
  members.map((self) => fleetShare(total, members, self, cap));

describe('fleetShare', () => {
  it('splits the total exactly, floor or ceil each, over every total and member count', () => {
    for (let n = 1; n <= 12; n++) {
      const members = Array.from({ length: n }, (_, i) => `replica-${i}`);
      for (let total = 0; total <= 100; total++) {
        const each = shares(total, members);
        assert.equal(
          each.reduce((a, b) => a + b, 0),
          total,
          `${total} over ${n}`,
        );
        assert.ok(Math.max(...each) - Math.min(...each) <= 1, `${total} over ${n}: ${each.join(',')}`);
      }
    }
    assert.deepEqual(shares(30, ['a', 'b', 'c']), [10, 10, 10]);
    assert.deepEqual(shares(31, ['a', 'b', 'c']), [11, 10, 10]);
  });

  it('gives the extra units by id order, the same whatever order each replica lists the members in', () => {
    const members = ['replica-c', 'replica-a', 'replica-b'];
    assert.deepEqual(
      members.map((self) => fleetShare(32, members, self, 100)),
      [10, 11, 11],
    );
    assert.equal(fleetShare(32, ['replica-b', 'replica-a', 'replica-c'], 'replica-c', 100), 10);
    assert.equal(fleetShare(32, ['replica-a', 'replica-b', 'replica-b', 'replica-c'], 'replica-b', 100), 11, 'a repeated id counts once');
    // code-unit order, not a locale's: 'Z' (0x5a) sorts before 'a' (0x61) in every replica
    assert.deepEqual(shares(1, ['a', 'Z']), [0, 1]);
  });

  it('gives 0 to the members after the first `total` when there are fewer units than members', () => {
    assert.deepEqual(shares(2, ['a', 'b', 'c', 'd']), [1, 1, 0, 0]);
    assert.deepEqual(shares(0, ['a', 'b']), [0, 0]);
  });

  it('counts self as a member and keeps to the per-process cap', () => {
    assert.equal(fleetShare(30, ['b', 'c'], 'a', 100), 10);
    assert.equal(fleetShare(30, [], 'a', 100), 30);
    assert.equal(fleetShare(30, [], 'a', 8), 8);
    assert.deepEqual(shares(300, ['a', 'b', 'c'], 64), [64, 64, 64]);
  });
});
