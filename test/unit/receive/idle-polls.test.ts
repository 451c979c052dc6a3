import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IdlePolls, RAMP_UP_WAKES } from '../../../src/receive/idle-polls.ts';

const any = () => true;

/** `n` members (0..n-1) joined in order, each with the order [0, 1, ..., queues-1]. */
function withMembers(queues: number, n: number, restMs = 0): IdlePolls {
  const idle = new IdlePolls(queues, restMs);
  const order = Array.from({ length: queues }, (_, i) => i);
  for (let m = 0; m < n; m++) idle.join(m, order);
  return idle;
}

describe('IdlePolls: one long poll per queue, whatever the number of idle loops (issue 24)', () => {
  it('10 idle loops on 5 queues: 5 polls, one per queue, and 5 spares', () => {
    const idle = withMembers(5, 10);
    assert.deepEqual(idle.toPoll(any, 0), [0, 1, 2, 3, 4]);
    assert.deepEqual([idle.polls, idle.spares, idle.members], [5, 5, 10]);
    assert.deepEqual(idle.toPoll(any, 0), [], 'a queue never has two');
  });

  it('never more polls than idle loops: each answer has a loop to go to', () => {
    const idle = withMembers(5, 2);
    assert.deepEqual(idle.toPoll(any, 0), [0, 1]);
    assert.equal(idle.spares, 0);
    idle.join(2, [4, 3, 2, 1, 0]);
    assert.deepEqual(idle.toPoll(any, 0), [4], "the latest joiner's order picks the next queue");
  });

  it('asks `take` only about a queue it would choose, and skips the ones it refuses', () => {
    const idle = withMembers(3, 2);
    const asked: number[] = [];
    const chosen = idle.toPoll((i) => {
      asked.push(i);
      return i !== 0;
    }, 0);
    assert.deepEqual(chosen, [1, 2]);
    assert.deepEqual(asked, [0, 1, 2]);
    const none: number[] = [];
    idle.toPoll((i) => {
      none.push(i);
      return true;
    }, 0);
    assert.deepEqual(none, [], 'no spare left: nothing asked');
  });

  it('a poll that returned messages hands them to the loop that waited longest', () => {
    const idle = withMembers(2, 4);
    idle.toPoll(any, 0);
    const d = idle.delivered(1, 3, 10);
    assert.deepEqual(d, { taker: 0, wake: [] }, 'not full: no spare is woken');
    assert.deepEqual([idle.members, idle.polls, idle.spares], [3, 1, 2]);
  });

  it(`a full poll wakes ${RAMP_UP_WAKES} spares, the ones that waited longest, and never one a poll in flight needs`, () => {
    const idle = withMembers(2, 5);
    idle.toPoll(any, 0);
    assert.deepEqual(idle.delivered(0, 1, 1), { taker: 0, wake: [1, 2] });
    assert.deepEqual([idle.members, idle.polls], [2, 1]);
    assert.deepEqual(idle.delivered(1, 10, 10), { taker: 3, wake: [4] }, 'only one spare left');
    const tight = withMembers(2, 2);
    tight.toPoll(any, 0);
    assert.deepEqual(tight.delivered(0, 1, 1).wake, [], 'the other member is needed by the poll on 1');
    assert.deepEqual(tight.wakeSpares(5), []);
  });

  it('an empty poll: with a spare for every queue, every loop keeps waiting and the queue rests --sleep', () => {
    const idle = withMembers(2, 3, 5_000);
    idle.toPoll(any, 0);
    assert.deepEqual(idle.emptied(0, false, 1_000, 1), { member: undefined, reason: undefined });
    assert.deepEqual(idle.toPoll(any, 1_000), [], 'resting');
    assert.equal(idle.restEnd(1_000), 6_000);
    assert.deepEqual(idle.toPoll(any, 5_999), []);
    assert.deepEqual(idle.toPoll(any, 6_000), [0]);
    assert.equal(idle.restEnd(6_000), undefined);
  });

  it('an empty poll with fewer loops than queues: its loop passes (short receives on every queue), as before', () => {
    const idle = withMembers(5, 1);
    assert.deepEqual(idle.toPoll(any, 0), [0]);
    assert.deepEqual(idle.emptied(0, false, 20_000, 5), { member: 0, reason: 'pass' });
    assert.equal(idle.members, 0);
  });

  it('a failed poll sends its loop on at once (the back-off is the queue health’s, not a rest)', () => {
    const idle = withMembers(2, 3, 5_000);
    idle.toPoll(any, 0);
    assert.deepEqual(idle.emptied(1, true, 10, 1), { member: 0, reason: 'failed' });
    assert.equal(idle.restEnd(10), undefined, 'no rest after a failure');
  });

  it('stop: a spare leaves at once; a loop a poll in flight needs stays, and leaves (or takes) when a poll ends', () => {
    const idle = withMembers(2, 3);
    idle.toPoll(any, 0);
    assert.equal(idle.leave(2), true, 'spare');
    assert.equal(idle.leave(1), false, 'needed by the two polls');
    assert.equal(idle.leave(0), false);
    assert.deepEqual(idle.toPoll(any, 0), [], 'no new poll while loops want to leave');
    assert.deepEqual(idle.delivered(0, 1, 1), { taker: 1, wake: [] }, 'a leaving loop takes what the poll returned');
    assert.deepEqual(idle.emptied(1, false, 0, 2), { member: 0, reason: 'leaving' });
    assert.deepEqual([idle.members, idle.polls], [0, 0]);
    assert.equal(idle.leave(7), true, 'a loop that is not waiting goes');
  });

  it('a poll ending with nobody in flight is a bug, not a miscount', () => {
    const idle = withMembers(1, 1);
    assert.throws(() => idle.delivered(0, 1, 1), /no poll in flight on queue 0/);
  });
});
