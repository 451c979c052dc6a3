import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grantWorkers, WorkerBudget, type QueueDemand } from '../../../src/temporal/worker-budget.ts';

const demands = (entries: Record<string, QueueDemand>) => new Map(Object.entries(entries));

describe('grantWorkers (--temporal-max-workers-total)', () => {
  it('grants what is free under the total', () => {
    assert.equal(grantWorkers(10, demands({ a: { alive: 3, wanted: 8 } }), 'a', 5), 5);
    assert.equal(grantWorkers(10, demands({ a: { alive: 7, wanted: 20 } }), 'a', 13), 3);
    assert.equal(grantWorkers(10, demands({ a: { alive: 10, wanted: 20 } }), 'a', 1), 0);
    assert.equal(grantWorkers(10, demands({ a: { alive: 12, wanted: 20 } }), 'a', 1), 0, 'over the total (lowered at a restart)');
    assert.equal(grantWorkers(10, demands({}), 'a', 0), 0);
  });

  it('keeps a share for other queues that want workers, so a big backlog cannot starve a small one', () => {
    // b holds 4 of 10 and wants 10; a has none and wants 2: a gets its 2 (below its share of 5).
    assert.equal(grantWorkers(10, demands({ a: { alive: 0, wanted: 2 }, b: { alive: 4, wanted: 10 } }), 'a', 2), 2);
    // b at 4 asks for 6 more while a (0 alive) wants 3: b may grow to its share of 5 and leave a its 3 -> 1... plus the rest.
    assert.equal(grantWorkers(10, demands({ a: { alive: 0, wanted: 3 }, b: { alive: 4, wanted: 10 } }), 'b', 6), 3);
    // Nobody else wants anything: b takes everything free.
    assert.equal(grantWorkers(10, demands({ a: { alive: 2, wanted: 2 }, b: { alive: 4, wanted: 10 } }), 'b', 6), 4);
  });

  it('never lets the queues together exceed the total, over many combinations', () => {
    for (let aliveA = 0; aliveA <= 6; aliveA++)
      for (let aliveB = 0; aliveB <= 6; aliveB++)
        for (let wantedA = 0; wantedA <= 8; wantedA += 2)
          for (let request = 0; request <= 8; request++) {
            const d = demands({ a: { alive: aliveA, wanted: wantedA }, b: { alive: aliveB, wanted: 8 } });
            const granted = grantWorkers(6, d, 'b', request);
            assert.ok(granted >= 0 && granted <= request);
            assert.ok(
              aliveA + aliveB + granted <= Math.max(6, aliveA + aliveB),
              JSON.stringify({ aliveA, aliveB, wantedA, request, granted }),
            );
          }
  });
});

describe('WorkerBudget', () => {
  it('counts a claim at once, so a second queue cannot take the same slot before the invocation returns', () => {
    const budget = new WorkerBudget(3);
    budget.report('a', 0, 3);
    budget.report('b', 0, 3);
    const a = budget.claim('a', 3);
    const b = budget.claim('b', 3);
    assert.equal(a + b, 3);
    assert.equal(budget.totalAlive(), 3);
  });

  it('holds an even share for queues that have not reported yet', () => {
    const budget = new WorkerBudget(4, ['a', 'b']);
    budget.report('a', 0, 10);
    assert.equal(budget.claim('a', 10), 2);
    budget.report('b', 0, 0);
    assert.equal(budget.claim('a', 10), 2, 'b wants nothing: a may take the rest');
  });

  it('gives back the slots of failed invocations', () => {
    const budget = new WorkerBudget(2);
    budget.report('a', 0, 2);
    assert.equal(budget.claim('a', 2), 2);
    budget.release('a', 2);
    assert.equal(budget.totalAlive(), 0);
    assert.equal(budget.claim('a', 2), 2);
  });

  it('grants everything without a total limit', () => {
    const budget = new WorkerBudget(undefined);
    assert.equal(budget.claim('a', 500), 500);
  });
});
