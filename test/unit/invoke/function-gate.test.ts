import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { FunctionGate } from '../../../src/invoke/function-gate.ts';
import type { InvokeError } from '../../../src/core/function-invoker.ts';
import { recordingLogger } from '../../support/factories.ts';

const denied: InvokeError = { kind: 'unusable', code: 'AccessDeniedException', message: 'not allowed', status: 403 };
const PAUSE_MSG = 'the function cannot be invoked; pausing it, messages are kept invisible';
const RESUME_MSG = 'the function can be invoked again; resuming';

/** random() just below 1: each pause is its ceiling minus 1 ms. */
const highest = () => 1 - 1e-9;

/** A gate on a hand-moved clock (no timers involved), with its log lines. */
function gateAt(start = 1_000_000, random: () => number = highest) {
  const clock = { now: start };
  const { logger, lines } = recordingLogger();
  const gate = new FunctionGate({ logger, random, now: () => clock.now });
  return {
    gate,
    clock,
    lines,
    pauses: () => lines.filter((l) => l.msg === PAUSE_MSG),
    resumes: () => lines.filter((l) => l.msg === RESUME_MSG),
  };
}

/** Whether a promise has settled, without waiting for it. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('FunctionGate: pause and resume', () => {
  it('is open until the function is found unusable', () => {
    const { gate, lines } = gateAt();
    assert.equal(gate.paused, false);
    assert.deepEqual(lines, []);
  });

  it('pauses for 1 s, doubling while the function keeps failing, up to 30 s', () => {
    const { gate, clock, pauses } = gateAt();
    const observed: number[] = [];
    for (let i = 0; i < 8; i++) {
      gate.pause(denied);
      const pauseMs = pauses().at(-1)?.['pauseMs'] as number;
      observed.push(pauseMs);
      clock.now += pauseMs - 1;
      assert.equal(gate.paused, true, `pause ${i + 1} still on 1 ms before it ends`);
      clock.now += 1;
      assert.equal(gate.paused, false, `pause ${i + 1} over after exactly pauseMs`);
    }
    assert.deepEqual(observed, [999, 1999, 3999, 7999, 15999, 29999, 29999, 29999]);
  });

  it('jitters only the upper half of each pause: random 0 gives half the ceiling', () => {
    const { gate, clock, pauses } = gateAt(1_000_000, () => 0);
    for (let i = 0; i < 7; i++) {
      gate.pause(denied);
      clock.now += pauses().at(-1)?.['pauseMs'] as number;
    }
    assert.deepEqual(
      pauses().map((l) => l['pauseMs']),
      [500, 1000, 2000, 4000, 8000, 15000, 15000],
    );
  });

  it('counts loops failing within one pause once, and logs one line per pause', () => {
    const { gate, clock, pauses } = gateAt();
    gate.pause(denied);
    gate.pause(denied);
    clock.now += 500;
    gate.pause({ ...denied, code: 'KMSAccessDeniedException' });
    clock.now += 498;
    gate.pause(denied);
    assert.equal(pauses().length, 1, 'four failures inside the first pause: one line');
    clock.now += 1; // the 999 ms pause is over
    gate.pause(denied);
    gate.pause(denied);
    const lines = pauses();
    assert.equal(lines.length, 2);
    assert.deepEqual(
      lines.map((l) => [l['attempt'], l['pauseMs']]),
      [
        [1, 999],
        [2, 1999],
      ],
      'the second pause doubled once, not once per failing loop',
    );
  });

  it('logs the pause as an error with the cause, the pause length and the attempt', () => {
    const { gate, pauses } = gateAt();
    gate.pause(denied);
    const [line] = pauses();
    assert.ok(line);
    assert.equal(line.level, 50);
    const err = line['err'] as Record<string, unknown>;
    assert.deepEqual([err['code'], err['message']], ['AccessDeniedException', 'not allowed']);
    assert.equal(line['pauseMs'], 999);
    assert.equal(line['attempt'], 1);
  });

  it('resume() opens the gate at once, logs once how long the function was unusable, and starts over', () => {
    const { gate, clock, pauses, resumes } = gateAt();
    const start = clock.now;
    gate.pause(denied);
    clock.now += 999;
    gate.pause(denied);
    clock.now += 1000; // inside the second pause (1999 ms)
    assert.equal(gate.paused, true);
    gate.resume();
    assert.equal(gate.paused, false, 'open before the pause would have ended');
    gate.resume();
    assert.equal(resumes().length, 1, 'a second resume() logs nothing');
    const [line] = resumes();
    assert.equal(line?.level, 30);
    assert.equal(line?.['pausedMs'], clock.now - start, 'measured from the first failure of the outage');
    assert.equal(line?.['attempts'], 2);

    clock.now += 60_000;
    const restart = clock.now;
    gate.pause(denied);
    assert.deepEqual([pauses().at(-1)?.['attempt'], pauses().at(-1)?.['pauseMs']], [1, 999], 'the next outage starts again at 1 s');
    clock.now += 200;
    gate.resume();
    assert.equal(resumes().at(-1)?.['pausedMs'], clock.now - restart, 'the next outage is measured from its own start');
    assert.equal(resumes().at(-1)?.['attempts'], 1);
  });

  it('resume() without a pause logs nothing', () => {
    const { gate, lines } = gateAt();
    gate.resume();
    gate.resume();
    assert.deepEqual(lines, []);
    assert.equal(gate.paused, false);
  });

  it('resume() after a pause that already ran out still logs the recovery once', () => {
    const { gate, clock, resumes } = gateAt();
    gate.pause(denied);
    clock.now += 5_000;
    assert.equal(gate.paused, false);
    gate.resume();
    gate.resume();
    assert.equal(resumes().length, 1);
    assert.equal(resumes()[0]?.['pausedMs'], 5_000);
  });
});

describe('FunctionGate.wait() with fake timers', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 1_000_000 }));
  afterEach(() => mock.timers.reset());

  function timedGate(random: () => number = highest) {
    const { logger, lines } = recordingLogger();
    return { gate: new FunctionGate({ logger, random, now: () => Date.now() }), lines };
  }

  it('returns at once when the gate is open', async () => {
    const { gate } = timedGate();
    assert.equal(await settled(gate.wait(new AbortController().signal)), true);
  });

  it('returns exactly when the pause ends', async () => {
    const { gate } = timedGate();
    gate.pause(denied); // 999 ms
    const waiting = gate.wait(new AbortController().signal);
    mock.timers.tick(998);
    assert.equal(await settled(waiting), false, 'still paused 1 ms before the end');
    mock.timers.tick(1);
    assert.equal(await settled(waiting), true);
    assert.equal(gate.paused, false);
  });

  it('releases every waiting loop when the pause ends', async () => {
    const { gate } = timedGate();
    gate.pause(denied);
    const stop = new AbortController();
    const waiters = [gate.wait(stop.signal), gate.wait(stop.signal), gate.wait(stop.signal)];
    mock.timers.tick(999);
    assert.equal(await settled(Promise.all(waiters)), true);
  });

  it('returns when stop aborts, long before the pause ends, and leaves the gate paused', async () => {
    const { gate } = timedGate(() => 0.5);
    for (let i = 0; i < 6; i++) {
      gate.pause(denied);
      mock.timers.tick(30_000);
    }
    gate.pause(denied); // a 22.5 s pause
    const stop = new AbortController();
    const waiting = gate.wait(stop.signal);
    mock.timers.tick(10);
    assert.equal(await settled(waiting), false);
    stop.abort();
    assert.equal(await settled(waiting), true, 'no timer had to fire');
    assert.equal(gate.paused, true);
  });

  it('returns at once when stop has already aborted', async () => {
    const { gate } = timedGate();
    gate.pause(denied);
    const stop = new AbortController();
    stop.abort();
    assert.equal(await settled(gate.wait(stop.signal)), true);
  });

  it('re-checks its clock when it wakes: a timer that fires early does not end the pause', async () => {
    // The gate's clock is moved by hand, apart from the timers, as an injected `now` may be.
    const clock = { now: 0 };
    const { logger } = recordingLogger();
    const gate = new FunctionGate({ logger, random: highest, now: () => clock.now });
    gate.pause(denied); // until 999 by the gate's clock
    const waiting = gate.wait(new AbortController().signal);
    clock.now = 500;
    mock.timers.tick(999);
    assert.equal(await settled(waiting), false, 'by the gate clock 499 ms remain: it sleeps again');
    clock.now = 999;
    mock.timers.tick(498);
    assert.equal(await settled(waiting), false, 'the second sleep is the 499 ms that remained');
    mock.timers.tick(1);
    assert.equal(await settled(waiting), true);
  });

  it('a loop that waits through a pause then fails again pauses twice as long', async () => {
    const { gate, lines } = timedGate();
    const stop = new AbortController();
    gate.pause(denied);
    const first = gate.wait(stop.signal);
    mock.timers.tick(999);
    await first;
    gate.pause(denied);
    const second = gate.wait(stop.signal);
    mock.timers.tick(1998);
    assert.equal(await settled(second), false);
    mock.timers.tick(1);
    assert.equal(await settled(second), true);
    assert.deepEqual(
      lines.map((l) => l['pauseMs']),
      [999, 1999],
    );
  });

  it('resume() by an invocation that got through ends the pause for loops already waiting', async () => {
    // An invocation that was in flight when another loop paused the gate answers: the pause is over
    // ("ends ... with the first invocation that gets through"), so the waiting loops must not sleep on.
    const { gate } = timedGate(() => 0.5);
    for (let i = 0; i < 6; i++) {
      gate.pause(denied);
      mock.timers.tick(30_000);
    }
    gate.pause(denied); // a 22.5 s pause
    const waiting = gate.wait(new AbortController().signal);
    mock.timers.tick(100);
    gate.resume();
    assert.equal(gate.paused, false);
    assert.equal(await settled(waiting), true, 'the waiting loop carries on with the open gate');
  });
});
