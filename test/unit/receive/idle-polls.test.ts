import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { IdlePolls, MIN_EMPTY_POLL_SPACING_MS } from '../../../src/receive/idle-polls.ts';

const yes = () => true;
const notFull = () => false;

describe('IdlePolls: one long poll per queue, whatever the number of idle loops', () => {
  it('polls every queue once, with no idle loop at all and with one: polls need no loop', () => {
    const idle = new IdlePolls(1_000, 0);
    assert.equal(idle.toPoll(yes, notFull, 0).length, 1_000);
    assert.equal(idle.polls, 1_000);
    assert.deepEqual(idle.toPoll(yes, notFull, 0), [], 'never a second poll on a queue');
    idle.join(1);
    assert.deepEqual(idle.toPoll(yes, notFull, 0), []);
    assert.equal(idle.members, 1);
  });

  it('an empty poll rests the queue --sleep, and at least a second after it was sent', () => {
    const idle = new IdlePolls(2, 5_000);
    idle.toPoll(yes, notFull, 0);
    idle.ended(0, 0, 10, false, 20_000);
    assert.deepEqual(idle.toPoll(yes, notFull, 24_999), []);
    assert.deepEqual(idle.toPoll(yes, notFull, 25_000), [0]);
    const quick = new IdlePolls(1, 0);
    quick.toPoll(yes, notFull, 100);
    quick.ended(0, 0, 10, false, 110);
    assert.deepEqual(quick.toPoll(yes, notFull, 100 + MIN_EMPTY_POLL_SPACING_MS - 1), [], 'an endpoint that answers at once is not a spin');
    assert.equal(quick.restEnd(200), 100 + MIN_EMPTY_POLL_SPACING_MS);
    assert.deepEqual(quick.toPoll(yes, notFull, 100 + MIN_EMPTY_POLL_SPACING_MS), [0]);
  });

  it('a failed poll does not rest (the back-off is the Receiver’s), and a queue that may not be polled is skipped, not lost', () => {
    const idle = new IdlePolls(3, 10_000);
    assert.deepEqual(
      idle.toPoll((i) => i !== 1, notFull, 0),
      [0, 2],
    );
    idle.ended(0, 0, 10, true, 50);
    assert.deepEqual(idle.toPoll(yes, notFull, 50), [1, 0], 'the one that waited longest first');
  });

  it('a queue whose batch waits gets no poll until it is taken', () => {
    const idle = new IdlePolls(1, 0);
    idle.toPoll(yes, notFull, 0);
    idle.ended(0, 3, 10, false, 10);
    assert.deepEqual(idle.toPoll(yes, notFull, 10), []);
    idle.taken(0);
    assert.deepEqual(idle.toPoll(yes, notFull, 10), [0], 'no rest after a poll that brought messages');
  });

  it('a full poll makes the queue hot: passes read it, and it is polled again once one finds it short, or a loop goes idle', () => {
    const idle = new IdlePolls(2, 0);
    idle.toPoll(yes, notFull, 0);
    idle.ended(0, 10, 10, false, 5);
    idle.taken(0);
    assert.equal(idle.covered(0), false, 'a pass reads it');
    assert.deepEqual(idle.toPoll(yes, notFull, 5), []);
    idle.read(0, 10, 10);
    assert.deepEqual(idle.toPoll(yes, notFull, 5), [], 'still full: still hot');
    idle.read(0, 4, 10);
    assert.deepEqual(idle.toPoll(yes, notFull, 5), [0]);
    idle.ended(0, 10, 10, false, 6);
    idle.taken(0);
    idle.join(7);
    assert.deepEqual(idle.toPoll(yes, notFull, 6), [0], 'a loop that goes idle found every queue it read empty');
  });

  it('no new poll while the ready set is full, nor beyond maxPolls: the queues take turns', () => {
    const idle = new IdlePolls(5, 0, () => 2);
    assert.deepEqual(idle.toPoll(yes, notFull, 0), [0, 1]);
    idle.ended(0, 0, 10, false, 20_000);
    assert.deepEqual(idle.toPoll(yes, notFull, 20_000), [2], 'the rotation goes on with the queues that waited');
    idle.ended(1, 0, 10, false, 20_000);
    assert.deepEqual(idle.toPoll(yes, notFull, 20_000), [3]);
    idle.ended(2, 0, 10, false, 40_000);
    assert.deepEqual(idle.toPoll(yes, notFull, 40_000), [4]);
    idle.ended(3, 0, 10, false, 40_000);
    assert.deepEqual(
      idle.toPoll(yes, () => true, 40_000),
      [],
      'full: none',
    );
    assert.deepEqual(idle.toPoll(yes, notFull, 40_000), [0]);
  });

  it('the share is asked at each call: a share that shrinks sends no poll until polls end below it', () => {
    let max = 3;
    const idle = new IdlePolls(5, 0, () => max);
    assert.deepEqual(idle.toPoll(yes, notFull, 0), [0, 1, 2]);
    max = 1;
    idle.ended(0, 0, 10, false, 20_000);
    assert.deepEqual(idle.toPoll(yes, notFull, 20_000), [], 'two still in flight, share one');
    idle.ended(1, 0, 10, false, 20_000);
    idle.ended(2, 0, 10, false, 20_000);
    assert.deepEqual(idle.toPoll(yes, notFull, 20_000), [3]);
  });

  it("waitSec: a queue's first poll waits 1..pollFor seconds (drawn), every later one pollFor", () => {
    const idle = new IdlePolls(3, 0);
    assert.equal(
      idle.waitSec(0, 20, () => 0, true),
      1,
    );
    assert.equal(
      idle.waitSec(1, 20, () => 0.999, true),
      20,
    );
    assert.equal(
      idle.waitSec(2, 20, () => 0.5, true),
      11,
    );
    for (const i of [0, 1, 2])
      assert.equal(
        idle.waitSec(i, 20, () => 0, true),
        20,
        'drawn once per queue',
      );
    assert.equal(
      new IdlePolls(1, 0).waitSec(0, 1, () => 0.99, true),
      1,
    );
  });

  it('waitSec: with more queues than polls, a turn waits the share of --poll-for that brings every queue round once per --poll-for (issue 42)', () => {
    // 1,000 queues on 100 polls: 2 s a turn, so each queue is read about every 20 s, not every 200 s.
    const capped = new IdlePolls(1_000, 0, () => 100);
    assert.equal(
      capped.waitSec(0, 20, () => 0.999, false),
      2,
    );
    assert.equal(
      capped.waitSec(1, 20, () => 0.999, true),
      2,
      'a first poll draws from 1..2',
    );
    assert.equal(
      capped.waitSec(2, 20, () => 0, true),
      1,
    );
    // At least a second: 10,000 queues on one poll.
    assert.equal(
      new IdlePolls(10_000, 0, () => 1).waitSec(0, 20, () => 0, false),
      1,
    );
    // Polls for every queue: --poll-for.
    assert.equal(
      new IdlePolls(100, 0, () => 100).waitSec(0, 20, () => 0, false),
      20,
    );
    // The share is read at each poll: queues found later shorten the turns.
    let share = 500;
    const growing = new IdlePolls(500, 0, () => share);
    assert.equal(
      growing.waitSec(0, 20, () => 0, false),
      20,
    );
    growing.grow(1_000);
    share = 250;
    assert.equal(
      growing.waitSec(0, 20, () => 0, false),
      5,
    );
  });

  it('quiet(): the last poll came back empty and nothing was read since', () => {
    const idle = new IdlePolls(2, 0);
    assert.equal(idle.quiet(0), false, 'never polled');
    idle.toPoll(yes, notFull, 0);
    idle.ended(0, 0, 10, false, 20_000);
    idle.ended(1, 3, 10, false, 20_000);
    assert.equal(idle.quiet(0), true);
    assert.equal(idle.quiet(1), false, 'its poll brought messages');
    idle.read(0, 2, 10);
    assert.equal(idle.quiet(0), false, 'a pass read messages from it');
    idle.taken(1);
    assert.deepEqual(idle.toPoll(yes, notFull, 20_000), [0, 1]);
    idle.ended(1, 0, 10, true, 40_000);
    assert.equal(idle.quiet(1), false, 'a failed poll says nothing');
  });

  it('grow(): queues added while running get their poll', () => {
    const idle = new IdlePolls(1, 0);
    idle.toPoll(yes, notFull, 0);
    idle.grow(3);
    assert.deepEqual(idle.toPoll(yes, notFull, 0), [1, 2]);
  });

  it('retire(): a queue that left is walked no more, its poll in flight ends as it would have, and revive() polls it again', () => {
    // 2,000 live queues beside 4,000 that left (the review: idle CPU from 23% to 42% of a core at each poll's end).
    const idle = new IdlePolls(6_000, 0);
    const sent = idle.toPoll((i) => i < 10, notFull, 0);
    assert.deepEqual(sent, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (let i = 0; i < 4_000; i++) idle.retire(i);
    assert.equal([...idle.uncovered()].length, 2_000, 'only the live queues are walked');
    // A poll of a retired queue still ends; an empty one brings it back into no set, a full one's batch still waits.
    idle.ended(0, 0, 10, false, 100);
    idle.ended(1, 10, 10, false, 100);
    assert.equal(idle.polling(0), false);
    assert.equal(idle.cold(1), false, 'its batch waits in the ready set');
    idle.taken(1);
    idle.read(2, 10, 10);
    assert.equal([...idle.uncovered()].length, 2_000, 'nor do they come back by a poll, a batch taken or a read');
    idle.revive(0);
    idle.revive(1);
    assert.deepEqual(
      idle.toPoll((i) => i < 2, notFull, 2_000),
      [0, 1],
      'back in the route: polled again',
    );
  });

  it('wakes spares in the order they joined; leave() takes one out', () => {
    const idle = new IdlePolls(1, 0);
    for (const m of [1, 2, 3, 4]) idle.join(m);
    idle.leave(2);
    assert.equal(idle.first(), 1);
    assert.deepEqual(idle.wakeSpares(2), [1, 3]);
    assert.equal(idle.members, 1);
  });

  it('ended() on a queue without a poll is a bug', () => {
    assert.throws(() => new IdlePolls(1, 0).ended(0, 0, 10, false, 0), /no poll in flight/);
  });
});
