import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReadySet } from '../../../src/receive/ready-set.ts';
import type { QueueList } from '../../../src/receive/queue-order.ts';

const list = (mode: QueueList['mode'], weights: number[]): QueueList => ({
  mode,
  queues: weights.map((weight, i) => ({ ref: `q${i}`, weight })),
});
const yes = () => true;

/** A seeded generator (mulberry32), so the weighted shares are exact run to run. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('ReadySet: which waiting batch a free loop takes', () => {
  it('strict: the first queue of the list, whatever order the polls answered in', () => {
    const set = new ReadySet<string>(10);
    set.add(7, 'seven');
    set.add(2, 'two');
    set.add(5, 'five');
    const order = list(
      'strict',
      Array.from({ length: 10 }, () => 1),
    );
    assert.deepEqual(
      [1, 2, 3].map(() => set.take(order, Math.random, yes)?.batch),
      ['two', 'five', 'seven'],
    );
    assert.equal(set.take(order, Math.random, yes), undefined);
  });

  it('skips a queue its limits keep from the loop (take says no), and leaves its batch waiting', () => {
    const set = new ReadySet<string>(10);
    set.add(0, 'zero');
    set.add(1, 'one');
    assert.deepEqual(
      set.take(list('strict', [1, 1]), Math.random, (i) => i !== 0),
      { queue: 1, batch: 'one' },
    );
    assert.equal(set.has(0), true);
    assert.equal(
      set.take(list('strict', [1, 1]), Math.random, () => false),
      undefined,
    );
  });

  it('prioritise goes first: a queue below its reserved minimum is taken before a higher one', () => {
    const set = new ReadySet<string>(10);
    set.add(0, 'high');
    set.add(3, 'reserved');
    const got = set.take(list('strict', [1, 1, 1, 1]), Math.random, yes, (o) => [...o.filter((i) => i === 3), ...o.filter((i) => i !== 3)]);
    assert.equal(got?.batch, 'reserved');
  });

  it('weighted: over 1,000 takes with both waiting, each queue’s share is within 0.05 of its weight', () => {
    const set = new ReadySet<number>(10);
    const weights = list('weighted', [3, 1]);
    const random = seeded(42);
    const taken = [0, 0];
    for (let n = 0; n < 1_000; n++) {
      if (!set.has(0)) set.add(0, 0);
      if (!set.has(1)) set.add(1, 1);
      taken[set.take(weights, random, yes)!.queue]!++;
    }
    assert.ok(Math.abs(taken[0]! / 1_000 - 0.75) <= 0.05, `share ${taken[0]! / 1_000}`);
  });

  it('random: uniform among the waiting queues', () => {
    const set = new ReadySet<number>(10);
    const random = seeded(7);
    const taken = [0, 0, 0];
    for (let n = 0; n < 3_000; n++) {
      for (const i of [0, 1, 2]) if (!set.has(i)) set.add(i, i);
      taken[set.take(list('random', [1, 1, 1]), random, yes)!.queue]!++;
    }
    for (const t of taken) assert.ok(Math.abs(t / 3_000 - 1 / 3) <= 0.05, `shares ${taken.join(', ')}`);
  });

  it('bounded: full at `bound` batches; one batch per queue; drain() empties it', () => {
    const set = new ReadySet<string>(2);
    set.add(0, 'a');
    assert.equal(set.full, false);
    set.add(1, 'b');
    assert.equal(set.full, true);
    assert.throws(() => set.add(1, 'again'), /already waits/);
    set.add(2, 'c'); // a poll in flight when it filled may still answer
    assert.equal(set.size, 3);
    assert.equal(set.takeQueue(1), 'b');
    assert.deepEqual(set.queues(), [0, 2]);
    assert.deepEqual(set.drain().sort(), ['a', 'c']);
    assert.equal(set.size, 0);
    assert.throws(() => new ReadySet(0), /bound/);
  });
});
