import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConcurrencyLimit } from '../../../src/invoke/concurrency-limit.ts';

const T0 = 1_000_000;

describe('ConcurrencyLimit: AIMD with a measured decrease', () => {
  it('starts at --concurrency and refuses bounds that cannot hold', () => {
    assert.equal(new ConcurrencyLimit({ max: 30, min: 1 }, T0).limit, 30);
    assert.throws(() => new ConcurrencyLimit({ max: 5, min: 6 }, T0), /1 <= min <= max, got min 6, max 5/);
    assert.throws(() => new ConcurrencyLimit({ max: 5, min: 0 }, T0), RangeError);
  });

  it('halves at most once per decrease window when most invocations are throttled', () => {
    const c = new ConcurrencyLimit({ max: 30, min: 1 }, T0);
    assert.deepEqual(c.throttled(T0), { from: 30, to: 15 });
    // Throttles of invocations sent before the decrease do not lower it again.
    for (let t = 1; t < 1_000; t += 100) assert.equal(c.throttled(T0 + t), undefined);
    assert.equal(c.limit, 15);
    assert.deepEqual(c.throttled(T0 + 1_000), { from: 15, to: 7 });
  });

  it('keeps the share that got through: one throttle among many successes lowers the limit by about a tenth', () => {
    const c = new ConcurrencyLimit({ max: 30, min: 1 }, T0);
    for (let i = 0; i < 40; i++) c.accepted(T0 + i, 5); // not saturated: no increase
    assert.deepEqual(c.throttled(T0 + 100), { from: 30, to: 27 });
    for (let i = 0; i < 3; i++) c.accepted(T0 + 200 + i, 27);
    // 3 accepted, 1 throttled since: 0.75.
    assert.deepEqual(c.throttled(T0 + 1_200), { from: 27, to: 20 });
  });

  it('lowers by at least a tenth and never below the floor', () => {
    const c = new ConcurrencyLimit({ max: 4, min: 3 }, T0);
    for (let i = 0; i < 1_000; i++) c.accepted(T0, 0);
    assert.deepEqual(c.throttled(T0), { from: 4, to: 3 });
    assert.equal(c.throttled(T0 + 5_000), undefined);
    assert.equal(c.limit, 3);
  });

  it('grows by one per increase window while every allowed loop is busy and nothing is throttled', () => {
    const c = new ConcurrencyLimit({ max: 10, min: 1, increaseWindowMs: 2_000 }, T0);
    c.throttled(T0); // 10 -> 5
    assert.equal(c.limit, 5);
    assert.equal(c.accepted(T0 + 1_999, 5), undefined, 'not before the window is over');
    assert.deepEqual(c.accepted(T0 + 2_000, 5), { from: 5, to: 6 });
    assert.equal(c.accepted(T0 + 3_000, 6), undefined);
    assert.deepEqual(c.accepted(T0 + 4_000, 6), { from: 6, to: 7 });
    const steps: number[] = [];
    for (let t = 4_000; t <= 20_000; t += 100) if (c.accepted(T0 + t, c.limit)) steps.push(c.limit);
    assert.deepEqual(steps, [8, 9, 10], 'capped at --concurrency');
  });

  it('waits three mean invocations between increases when that is longer than the window', () => {
    const c = new ConcurrencyLimit({ max: 10, min: 1 }, T0);
    c.throttled(T0); // 10 -> 5
    assert.equal(c.accepted(T0 + 2_500, 5, 1_000), undefined, 'a 1 s invocation: 3 s between increases');
    assert.deepEqual(c.accepted(T0 + 3_000, 5, 1_000), { from: 5, to: 6 });
  });

  it('does not grow while loops sit idle (the limit is not the bottleneck)', () => {
    const c = new ConcurrencyLimit({ max: 10, min: 1 }, T0);
    c.throttled(T0);
    for (let t = 0; t <= 60_000; t += 100) c.accepted(T0 + t, 2);
    assert.equal(c.limit, 5);
  });

  it('a late throttle (an invocation sent before the decrease) holds the next increase back a whole window', () => {
    const c = new ConcurrencyLimit({ max: 10, min: 1, increaseWindowMs: 2_000 }, T0);
    c.throttled(T0); // 10 -> 5
    c.throttled(T0 + 500); // inside the decrease window: no change
    assert.equal(c.accepted(T0 + 2_000, 5), undefined);
    assert.deepEqual(c.accepted(T0 + 2_500, 5), { from: 5, to: 6 });
  });

  /**
   * Three replicas of 30 loops share a function with reserved concurrency 20; each invocation takes 400 ms.
   * A tick-based model (10 ms): a loop holding a permit receives (30 ms), then invokes; Lambda accepts it if fewer than 20 run,
   * else throttles it and the loop retries after a back-off. The sum of limits must settle near the budget with
   * few throttles, and no replica may starve.
   */
  it('three replicas converge on a shared budget of 20 with few throttles', (t) => {
    const BUDGET = 20;
    const DURATION = 400;
    const TICK = 10;
    /** A loop receives before it invokes. */
    const RECEIVE_MS = 30;
    type Loop = { busyUntil: number; retryAt: number; running: boolean; throttles: number };
    const replicas = Array.from({ length: 3 }, () => ({ c: new ConcurrencyLimit({ max: 30, min: 1 }, T0), loops: [] as Loop[] }));
    let running = 0;
    let accepted = 0;
    let throttled = 0;
    const inUse: number[] = [];
    const sums: number[] = [];
    for (let now = T0, tick = 0; now < T0 + 120_000; now += TICK, tick++) {
      const t = now;
      const late = t >= T0 + 30_000;
      for (const r of replicas) {
        for (const l of r.loops.filter((l) => l.running && l.busyUntil <= t)) {
          l.running = false;
          running--;
          r.loops.splice(r.loops.indexOf(l), 1);
        }
      }
      // Replicas take turns going first, as their requests interleave at the function.
      for (const r of [0, 1, 2].map((k) => replicas[(tick + k) % 3]!)) {
        while (r.loops.length < r.c.limit) r.loops.push({ busyUntil: 0, retryAt: t + RECEIVE_MS, running: false, throttles: 0 });
        for (const l of r.loops) {
          if (l.running || l.retryAt > t) continue;
          if (running < BUDGET) {
            running++;
            l.running = true;
            l.busyUntil = t + DURATION;
            r.c.accepted(t, r.loops.length, DURATION);
            if (late) accepted++;
          } else {
            // The dispatcher's retry of a throttled batch: 100 ms, doubling up to 5 s (jitter left out).
            l.retryAt = t + Math.min(5_000, 100 * 2 ** l.throttles++);
            r.c.throttled(t);
            if (late) throttled++;
          }
        }
      }
      if (late) {
        inUse.push(running);
        sums.push(replicas.reduce((s, r) => s + r.c.limit, 0));
      }
    }
    const meanInUse = inUse.reduce((a, b) => a + b, 0) / inUse.length;
    const throttleShare = throttled / (accepted + throttled);
    t.diagnostic(
      `after 30 s: mean in use ${meanInUse.toFixed(2)} of 20, throttled ${(throttleShare * 100).toFixed(2)}%, limits ${replicas.map((r) => r.c.limit).join('/')}, sum ${Math.min(...sums)}-${Math.max(...sums)}`,
    );
    // The model retries throttled loops on their back-off alone (the dispatcher also retries one as soon as one
    // of its own invocations ends), so it throttles more than the real thing: the end-to-end figures are in
    // test/integration/adaptive-concurrency.test.ts.
    assert.ok(meanInUse >= 16, `mean in use ${meanInUse.toFixed(2)} of 20`);
    assert.ok(throttleShare < 0.12, `throttled ${(throttleShare * 100).toFixed(2)}% of invocations`);
    assert.ok(Math.max(...sums) <= 26, `sum of limits up to ${Math.max(...sums)}`);
    for (const r of replicas) assert.ok(r.c.limit >= 1, `a replica starved at ${r.c.limit}`);
  });
});
