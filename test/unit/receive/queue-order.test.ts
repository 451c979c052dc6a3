import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseQueueList } from '../../../src/config/queue-list.ts';
import { drawOrder, type QueueList } from '../../../src/receive/queue-order.ts';
import { seeded } from '../../support/seeded.ts';

function list(value: string): QueueList {
  const { list, problems } = parseQueueList(value);
  assert.deepEqual(problems, []);
  return list!;
}

describe('drawOrder', () => {
  it('strict order is always the given order', () => {
    const l = list('a,b,c,d');
    for (let i = 0; i < 100; i++) assert.deepEqual(drawOrder(l, Math.random), [0, 1, 2, 3]);
  });

  it('every draw is a permutation', () => {
    const rnd = seeded(7);
    for (const spec of ['a:3,b:2,c:1', 'a:1,b:1,c:1,d:1']) {
      const l = list(spec);
      for (let i = 0; i < 1000; i++)
        assert.deepEqual(
          [...drawOrder(l, rnd)].sort(),
          l.queues.map((_, k) => k),
        );
    }
  });

  it('weighted: a queue comes first with probability weight/total, and second in proportion among the rest', () => {
    const l = list('a:3,b:2,c:1');
    const rnd = seeded(42);
    const n = 60_000;
    const first = [0, 0, 0];
    let bSecondAfterA = 0;
    let aFirst = 0;
    for (let i = 0; i < n; i++) {
      const o = drawOrder(l, rnd);
      first[o[0]!]!++;
      if (o[0] === 0) {
        aFirst++;
        if (o[1] === 1) bSecondAfterA++;
      }
    }
    // Expected 1/2, 1/3, 1/6; standard error at n=60000 is < 0.0021, so 0.01 is ~5 sigma.
    assert.ok(Math.abs(first[0]! / n - 3 / 6) < 0.01, `a first ${first[0]! / n}`);
    assert.ok(Math.abs(first[1]! / n - 2 / 6) < 0.01, `b first ${first[1]! / n}`);
    assert.ok(Math.abs(first[2]! / n - 1 / 6) < 0.01, `c first ${first[2]! / n}`);
    // Given a first, b is second with probability 2/3.
    assert.ok(Math.abs(bSecondAfterA / aFirst - 2 / 3) < 0.015, `b second after a ${bSecondAfterA / aFirst}`);
  });

  it('weighted: a queue of weight 0 (one that left a found route) always comes last', () => {
    const rnd = seeded(3);
    const l: QueueList = { mode: 'weighted', queues: [{ ref: 'gone', weight: 0 }, ...list('a:3,b:1').queues] };
    for (let i = 0; i < 1000; i++) assert.equal(drawOrder(l, rnd).at(-1), 0);
  });

  it('weighted with 10,000 queues (found by tag, weights from tags): a permutation, heavier queues first more often', () => {
    const rnd = seeded(11);
    const l: QueueList = {
      mode: 'weighted',
      queues: Array.from({ length: 10_000 }, (_, i) => ({ ref: `q${i}`, weight: i < 100 ? 100 : 1 })),
    };
    const order = drawOrder(l, rnd);
    assert.deepEqual(
      [...order].sort((a, b) => a - b),
      l.queues.map((_, k) => k),
    );
    // The 100 heavy queues hold 100 x 100 of 19,900 weight: about half of the first places.
    const heavyFirst = order.slice(0, 100).filter((k) => k < 100).length;
    assert.ok(heavyFirst > 30 && heavyFirst < 80, `${heavyFirst} heavy queues among the first 100`);
  });

  it('random: every queue is first equally often and every permutation appears', () => {
    const l = list('a:1,b:1,c:1');
    const rnd = seeded(3);
    const n = 60_000;
    const first = [0, 0, 0];
    const perms = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const o = drawOrder(l, rnd);
      first[o[0]!]!++;
      perms.set(o.join(''), (perms.get(o.join('')) ?? 0) + 1);
    }
    for (const f of first) assert.ok(Math.abs(f / n - 1 / 3) < 0.01, `first share ${f / n}`);
    assert.equal(perms.size, 6);
    for (const c of perms.values()) assert.ok(Math.abs(c / n - 1 / 6) < 0.01, `permutation share ${c / n}`);
  });
});
