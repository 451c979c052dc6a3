// The adaptive gate's waiting rooms: how many loops may hold a batch, how many may invoke, in what order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { AdaptiveCeiling } from '../../../src/invoke/adaptive-ceiling.ts';
import { FixedCeiling } from '../../../src/invoke/ceiling.ts';
import { ConcurrencyGate } from '../../../src/invoke/concurrency-gate.ts';
import { GrowthCeiling } from '../../../src/invoke/growth-ceiling.ts';

type Result = 'ok' | 'throttled' | 'failed';

function gate(max: number, min = 1) {
  let now = 0;
  const changes: { from: number; to: number }[] = [];
  const g = new ConcurrencyGate([new FixedCeiling(max), new AdaptiveCeiling({ max, min }, now)], {
    now: () => now,
    onChange: (c) => changes.push(c),
  });
  return { g, changes, advance: (ms: number) => (now += ms) };
}

/** An Invoke that ends when its `end` is called. */
function pending(g: ConcurrencyGate, log: string[], name: string) {
  let end: (r: Result) => void = () => {};
  const done = g.invoke(
    () =>
      new Promise<Result>((resolve) => {
        log.push(name);
        end = resolve;
      }),
    (r) => (r === 'ok' ? 'accepted' : r),
  );
  return { done, end: (r: Result = 'ok') => end(r) };
}

describe('ConcurrencyGate', () => {
  it('lets the limit plus a quarter of it (rounded up) hold a batch; the next loop waits for a leave', async () => {
    const { g } = gate(8);
    const halt = new AbortController();
    for (let i = 0; i < 10; i++) assert.equal(await g.enter(halt.signal), true, `loop ${i}`);
    let entered = false;
    const eleventh = g.enter(halt.signal).then((v) => (entered = v));
    await tick();
    assert.equal(entered, false, 'over 8 + 2');
    g.leave();
    await eleventh;
    assert.equal(entered, true);
  });

  it('a halt wakes a waiting loop without counting it', async () => {
    const { g } = gate(1);
    const halt = new AbortController();
    assert.equal(await g.enter(halt.signal), true);
    assert.equal(await g.enter(halt.signal), true); // 1 + ceil(0.25)
    const third = g.enter(halt.signal);
    halt.abort();
    assert.equal(await third, false);
  });

  it('at most the limit invoke at once; the others wait in arrival order, and no newcomer jumps the line', async () => {
    const { g } = gate(2);
    const log: string[] = [];
    const a = pending(g, log, 'a');
    const b = pending(g, log, 'b');
    const c = pending(g, log, 'c');
    const d = pending(g, log, 'd');
    await tick();
    assert.deepEqual(log, ['a', 'b']);
    a.end();
    await a.done;
    const e = pending(g, log, 'e');
    await tick();
    assert.deepEqual(log, ['a', 'b', 'c'], 'c had waited; e queues behind d');
    b.end();
    c.end();
    await Promise.all([b.done, c.done]);
    await tick();
    assert.deepEqual(log, ['a', 'b', 'c', 'd', 'e']);
    d.end();
    e.end();
    await Promise.all([d.done, e.done]);
  });

  it('a throttle lowers the limit; an accepted invocation ends the oldest throttled back-off early', async () => {
    const { g, changes, advance } = gate(10);
    const log: string[] = [];
    const t = pending(g, log, 't');
    const s = pending(g, log, 's');
    await tick();
    advance(2_000);
    t.end('throttled');
    await t.done;
    assert.deepEqual(changes, [{ from: 10, to: 5 }], 'no invocation accepted yet: halved');
    const started = Date.now();
    const backOff = g.throttledBackOff(10_000, new AbortController().signal);
    s.end('ok');
    await s.done;
    await backOff;
    assert.ok(Date.now() - started < 1_000, 'woken by the accepted invocation, not at the end of 10 s');
  });
  it('a failed invocation (no answer, not sent, 5xx, unusable) is neither accepted nor throttled for the limit (item 7)', async () => {
    const { g, changes, advance } = gate(10);
    const log: string[] = [];
    for (let i = 0; i < 9; i++) {
      const f = pending(g, log, `f${i}`);
      await tick();
      advance(100);
      f.end('failed');
      await f.done;
    }
    assert.deepEqual(changes, [], 'failures move nothing');
    advance(2_000);
    const t = pending(g, log, 't');
    await tick();
    t.end('throttled');
    await t.done;
    // Nothing was accepted since the start: the throttle halves the limit. Counted as accepted, the 9 failures
    // would have made it 9 of 10 and lowered the limit by a tenth only.
    assert.deepEqual(changes, [{ from: 10, to: 5 }]);
  });

  it('a parked batch gives its place to a waiting loop and takes one back ahead of new loops', async () => {
    const { g } = gate(4); // 4 + 1 places
    const halt = new AbortController();
    for (let i = 0; i < 5; i++) assert.equal(await g.enter(halt.signal), true);
    let entered = 0;
    const newcomers = [g.enter(halt.signal), g.enter(halt.signal)].map((p) => p.then((v) => v && entered++));
    await tick();
    assert.equal(entered, 0, 'every place taken');
    g.park();
    await tick();
    assert.equal(entered, 1, 'the parked place went to the first loop in line, and only to it');
    let back = false;
    const rejoin = g.unpark().then(() => (back = true));
    await tick();
    assert.equal(back, false, 'no free place yet');
    g.leave();
    await rejoin;
    assert.equal(back, true, 'the freed place went to the parked batch, not to the loop still in line');
    assert.equal(entered, 1);
    assert.deepEqual(g.counts, { holding: 5, waiting: 0, enterLine: 1, rejoinLine: 0 });
    halt.abort();
    await Promise.all(newcomers);
    assert.equal(g.counts.enterLine, 0, 'a halt empties the line');
  });

  it('parked batches are capped: a new receive needs holding + waiting under twice the places', async () => {
    const { g } = gate(4); // 5 places, at most 10 batches
    const halt = new AbortController();
    for (let i = 0; i < 5; i++) assert.equal(await g.enter(halt.signal), true);
    for (let i = 0; i < 5; i++) g.park();
    for (let i = 0; i < 5; i++) assert.equal(await g.enter(halt.signal), true, `new ${i}`);
    for (let i = 0; i < 5; i++) g.park();
    assert.deepEqual(g.counts, { holding: 0, waiting: 10, enterLine: 0, rejoinLine: 0 });
    let entered = false;
    const over = g.enter(halt.signal).then((v) => (entered = v));
    await tick();
    assert.equal(entered, false, 'every place is free, but 10 batches already wait');
    g.leave(true); // a parked batch ended while waiting (a shutdown)
    await over;
    assert.equal(entered, true);
  });

  it('keeps to the lowest of its ceilings, whichever comes first', async () => {
    const g = new ConcurrencyGate([new FixedCeiling(5), new FixedCeiling(2)], { now: () => 0, onChange: () => {} });
    assert.equal(g.limit, 2);
    const log: string[] = [];
    const calls = ['a', 'b', 'c'].map((name) => pending(g, log, name));
    await tick();
    assert.deepEqual(log, ['a', 'b'], 'the lower ceiling holds the third call');
    calls[0]?.end();
    await tick();
    assert.deepEqual(log, ['a', 'b', 'c']);
    calls[1]?.end();
    calls[2]?.end();
    await Promise.all(calls.map((c) => c.done));
    assert.throws(() => new ConcurrencyGate([], { now: () => 0, onChange: () => {} }), /a ceiling that holds still/);
  });

  it('under the fixed ceiling alone: every loop takes a place, parks and rejoins at once, no call waits, nothing moves', async () => {
    const changes: unknown[] = [];
    let rejoinWaits = 0;
    const g = new ConcurrencyGate([new FixedCeiling(3)], {
      now: () => 0,
      onChange: (c) => changes.push(c),
      onRejoinWait: () => rejoinWaits++,
    });
    assert.deepEqual([g.tryEnter(), g.tryEnter(), g.tryEnter()], [true, true, true]);
    g.park();
    g.park();
    await Promise.all([g.unpark(), g.unpark()]);
    assert.deepEqual(g.counts, { holding: 3, waiting: 0, enterLine: 0, rejoinLine: 0 });
    const log: string[] = [];
    const calls = ['a', 'b', 'c'].map((name) => pending(g, log, name));
    await tick();
    assert.deepEqual(log, ['a', 'b', 'c'], 'one permit for each loop');
    const halt = new AbortController();
    let backedOff = false;
    const backOff = g.throttledBackOff(10_000, halt.signal).then(() => (backedOff = true));
    calls[0]?.end('throttled');
    calls[1]?.end('ok');
    calls[2]?.end('failed');
    await Promise.all(calls.map((c) => c.done));
    await tick();
    assert.equal(backedOff, false, 'a plain sleep: an accepted invocation does not cut it short');
    halt.abort();
    await backOff;
    assert.equal(g.limit, 3);
    assert.deepEqual(changes, []);
    assert.equal(rejoinWaits, 0);
  });

  it('with a growth cap: starts at the floor, and lets a waiting Invoke in when the window moves on, with none ending', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let now = 0;
    const changes: unknown[] = [];
    const g = new ConcurrencyGate(
      [
        new FixedCeiling(16),
        new AdaptiveCeiling({ max: 16, min: 2 }, now),
        new GrowthCeiling({ factor: 2, windowMs: 10_000 }, 2, () => now),
      ],
      { now: () => now, onChange: (c) => changes.push(c) },
    );
    assert.equal(g.limit, 2);
    assert.deepEqual(changes, [{ from: 16, to: 2, byGrowthCap: true }]);
    const log: string[] = [];
    const calls = ['a', 'b', 'c', 'd', 'e'].map((name) => pending(g, log, name));
    await tick();
    assert.deepEqual(log, ['a', 'b'], 'two in flight: the floor');
    // A window and a sub-window later at 2 in flight: 4 are allowed, and the timer lets two more in.
    now = 11_000;
    t.mock.timers.tick(11_000);
    await tick();
    assert.deepEqual(log, ['a', 'b', 'c', 'd']);
    assert.deepEqual(changes.at(-1), { from: 2, to: 4, byGrowthCap: true });
    for (const c of calls.slice(0, 4)) c.end();
    await Promise.all(calls.slice(0, 4).map((c) => c.done));
    assert.deepEqual(log, ['a', 'b', 'c', 'd', 'e']);
    calls[4]!.end();
    await calls[4]!.done;
  });
});
