// Membership (src/fleet/membership.ts): liveness from counter changes on the observer's own monotonic clock, as
// the Kinesis Client Library decides it, never from a wall clock in an item.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MEMBER_TTL_MARGIN_SECONDS, memberTtlEpochSeconds, Membership, type MemberItem } from '../../../src/fleet/membership.ts';

const EXPIRY = 10_000;

/** An observer `self` with a clock the test moves. */
function observer(self = 'a'): { membership: Membership; advance: (ms: number) => void } {
  let now = 5_000; // a monotonic clock starts anywhere
  const membership = new Membership({ self, expiryMs: EXPIRY, now: () => now });
  return { membership, advance: (ms) => (now += ms) };
}

const item = (id: string, heartbeat: number, extra: Partial<MemberItem> = {}): MemberItem => ({ id, heartbeat, ...extra });

describe('Membership', () => {
  it('keeps a member live while its counter changes, and drops it expiryMs after the counter stopped', () => {
    const { membership, advance } = observer();
    assert.deepEqual(membership.observe([item('a', 1), item('b', 1)]).ids, ['a', 'b']);
    for (let beat = 2; beat <= 6; beat++) {
      advance(3_300);
      assert.deepEqual(membership.observe([item('a', beat), item('b', beat)]).ids, ['a', 'b']);
    }
    // b's counter stops at 6: still live just under expiryMs after it last changed, gone at expiryMs
    advance(3_300);
    assert.deepEqual(membership.observe([item('a', 7), item('b', 6)]).ids, ['a', 'b']);
    advance(EXPIRY - 3_300 - 1);
    assert.deepEqual(membership.live().ids, ['a', 'b']);
    advance(1);
    assert.deepEqual(membership.live().ids, ['a']);
    assert.deepEqual(membership.observe([item('a', 8), item('b', 6)]).ids, ['a']);
  });

  it('never reads the wall-clock expiry field: a skewed one neither keeps a member alive nor kills it', () => {
    const { membership, advance } = observer();
    const past = 1; // a clock years behind
    const future = memberTtlEpochSeconds(Date.now()) + 365 * 24 * 3600; // a clock a year ahead
    membership.observe([item('b', 1, { expiresAtEpochSeconds: past }), item('c', 1, { expiresAtEpochSeconds: future })]);
    advance(EXPIRY / 2);
    // b beats with an expiry long past: live; c's expiry is a year away but its counter is silent
    assert.deepEqual(
      membership.observe([item('b', 2, { expiresAtEpochSeconds: past }), item('c', 1, { expiresAtEpochSeconds: future })]).ids,
      ['a', 'b', 'c'],
    );
    advance(EXPIRY / 2);
    assert.deepEqual(
      membership.observe([item('b', 3, { expiresAtEpochSeconds: past }), item('c', 1, { expiresAtEpochSeconds: future })]).ids,
      ['a', 'b'],
    );
  });

  it('drops a member whose item is gone (a graceful leave) at once, and takes it back when it returns', () => {
    const { membership, advance } = observer();
    membership.observe([item('a', 1), item('b', 1)]);
    advance(100);
    assert.deepEqual(membership.observe([item('a', 2)]).ids, ['a']);
    advance(100);
    assert.deepEqual(membership.observe([item('a', 3), item('b', 1)]).ids, ['a', 'b'], 'back, even with its old counter');
  });

  it('takes back a member that had expired once its counter changes again', () => {
    const { membership, advance } = observer();
    membership.observe([item('b', 41)]);
    advance(EXPIRY);
    assert.deepEqual(membership.observe([item('b', 41)]).ids, ['a']);
    advance(EXPIRY * 3);
    assert.deepEqual(membership.observe([item('b', 41)]).ids, ['a'], 'still the same counter');
    assert.deepEqual(membership.observe([item('b', 0)]).ids, ['a', 'b'], 'restarted: any change counts, not only a rise');
    advance(EXPIRY - 1);
    assert.deepEqual(membership.live().ids, ['a', 'b']);
  });

  it('holds self live with no item of its own and a silent counter, and hands on the live items as read', () => {
    const { membership, advance } = observer('m');
    assert.deepEqual(membership.observe([]).ids, ['m']);
    const busy = item('b', 1, { busyQueues: ['orders'] });
    membership.observe([item('m', 1), busy, item('z', 1)]);
    advance(EXPIRY * 2);
    const live = membership.observe([item('m', 1), { ...busy, heartbeat: 2 }, item('z', 1)]);
    assert.deepEqual(live.ids, ['b', 'm']);
    assert.deepEqual(live.items, [item('m', 1), { ...busy, heartbeat: 2 }]);
  });

  it('is settled once it has watched for expiryMs, when a leftover item can no longer pass for a live one', () => {
    const { membership, advance } = observer();
    membership.observe([item('crashed-before-we-started', 7)]);
    assert.equal(membership.settled(), false);
    assert.deepEqual(membership.live().ids, ['a', 'crashed-before-we-started']);
    advance(EXPIRY);
    assert.equal(membership.settled(), true);
    assert.deepEqual(membership.live().ids, ['a']);
  });

  it('refuses an expiry that is not a positive number of ms', () => {
    assert.throws(() => new Membership({ self: 'a', expiryMs: 0, now: () => 0 }), RangeError);
    assert.throws(() => new Membership({ self: 'a', expiryMs: Number.NaN, now: () => 0 }), RangeError);
  });
});

describe('memberTtlEpochSeconds', () => {
  it('is the wall-clock time in epoch seconds plus an hour: housekeeping, never liveness', () => {
    assert.equal(MEMBER_TTL_MARGIN_SECONDS, 3600);
    assert.equal(memberTtlEpochSeconds(1_700_000_000_000), 1_700_000_000 + 3600);
    assert.equal(memberTtlEpochSeconds(1_700_000_000_001), 1_700_000_001 + 3600);
  });
});
