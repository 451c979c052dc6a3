// Worker-set sizing (src/temporal/worker-set-sizing.ts): rates, backlog and age in, the set's size out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decideWorkerSet,
  initialWorkerSetState,
  type WorkerSetLimits,
  type WorkerSetReading,
  type WorkerSetState,
} from '../../../src/temporal/worker-set-sizing.ts';

const limits: WorkerSetLimits = {
  min: 0,
  max: 20,
  capacityPerSec: 2,
  maxStep: 4,
  upCooldownMs: 10_000,
  downCooldownMs: 60_000,
  drainMs: 30_000,
};
const reading = (now: number, addRatePerSec: number, dispatchRatePerSec: number, backlog: number, backlogAgeMs = 0): WorkerSetReading => ({
  now,
  addRatePerSec,
  dispatchRatePerSec,
  backlog,
  backlogAgeMs,
});

/** Feeds readings one after another; returns every decision. */
function run(readings: readonly WorkerSetReading[], l: WorkerSetLimits = limits, state: WorkerSetState = initialWorkerSetState(l)) {
  const out = [];
  for (const r of readings) {
    const d = decideWorkerSet(state, r, l);
    state = d.state;
    out.push(d);
  }
  return out;
}

describe('worker-set sizing', () => {
  it('idle: the minimum, and nothing to change', () => {
    const [d] = run([reading(0, 0, 0, 0)], { ...limits, min: 1 });
    assert.equal(d?.desired, 1);
    assert.equal(d?.reason, 'steady');
  });

  it('square-root staffing for the arrival rate: 8 tasks/s at 2 per worker is a load of 4, 4 + sqrt(4) = 6 workers', () => {
    const [d] = run([reading(0, 8, 0, 0)], { ...limits, maxStep: 100 });
    assert.equal(d?.target, 6);
    assert.equal(d?.desired, 6);
  });

  it('a backlog adds the workers that drain it within the drain time, more when its oldest task is already older', () => {
    // 120 tasks at 2/s per worker within 30 s: 2 workers; 60 s old against 30 s: twice as urgent.
    assert.equal(run([reading(0, 0, 0, 120)], { ...limits, maxStep: 100 })[0]?.target, 2);
    assert.equal(run([reading(0, 0, 0, 120, 60_000)], { ...limits, maxStep: 100 })[0]?.target, 4);
  });

  it('capped steps and the up cool-down: 0 -> 4 at once, -> 8 only after the cool-down, never above the maximum', () => {
    const ds = run([reading(0, 0, 0, 600), reading(5_000, 0, 0, 600), reading(10_000, 0, 0, 600), reading(20_000, 0, 0, 6_000)]);
    assert.deepEqual(
      ds.map((d) => [d.desired, d.reason]),
      [
        [4, 'scale-up'],
        [4, 'up-cooldown'],
        [8, 'scale-up'],
        [12, 'scale-up'],
      ],
    );
    assert.equal(ds[3]?.target, 20, 'the maximum bounds the target');
  });

  it('asymmetric cool-downs: a drained backlog keeps the workers for the down cool-down, then steps down', () => {
    const up = run([reading(0, 0, 0, 240)]);
    assert.equal(up[0]?.desired, 4);
    const ds = run(
      [reading(30_000, 0, 0, 0), reading(59_999, 0, 0, 0), reading(60_000, 0, 0, 0), reading(61_000, 0, 0, 0)],
      limits,
      up[0].state,
    );
    assert.deepEqual(
      ds.map((d) => [d.desired, d.reason]),
      [
        [4, 'down-cooldown'],
        [4, 'down-cooldown'],
        [0, 'scale-down'],
        [0, 'steady'],
      ],
    );
  });

  it("measures one worker's capacity while tasks wait (dispatch / workers), as an EWMA", () => {
    // 4 workers dispatch 40 tasks/s while a backlog waits: 10 per worker, not the assumed 2.
    const start = run([reading(0, 0, 0, 240)]);
    const [d] = run([reading(1_000, 40, 40, 100)], limits, start[0]!.state);
    assert.ok(Math.abs((d?.state.capacityPerSec ?? 0) - 10) < 1e-9, String(d?.state.capacityPerSec));
    const [e] = run([reading(2_000, 40, 20, 100)], limits, d!.state);
    assert.ok(Math.abs((e?.state.capacityPerSec ?? 0) - (10 + 0.3 * (5 - 10))) < 1e-9, String(e?.state.capacityPerSec));
    // Without waiting tasks a low dispatch rate says nothing about capacity.
    const [f] = run([reading(3_000, 1, 1, 0)], limits, e!.state);
    assert.equal(f?.state.capacityPerSec, e?.state.capacityPerSec);
  });

  it('the arrival rate is an EWMA: one spike moves the target by a third of it', () => {
    const ds = run([reading(0, 0, 0, 0), reading(1_000, 30, 0, 0)], { ...limits, maxStep: 100 });
    assert.ok(Math.abs((ds[1]?.state.arrivalPerSec ?? 0) - 9) < 1e-9);
    // load 4.5: 4.5 + sqrt(4.5) = 6.62 -> 7
    assert.equal(ds[1]?.target, 7);
  });

  it('fully idle (no backlog, nothing added or dispatched): the arrival EWMA snaps to 0 rather than decaying', () => {
    const ds = run([reading(0, 30, 0, 0), reading(1_000, 0, 0, 0)], { ...limits, maxStep: 100, downCooldownMs: 0 });
    assert.equal(ds[1]?.state.arrivalPerSec, 0);
    assert.equal(ds[1]?.desired, 0);
    // Still dispatching: not idle, the EWMA decays.
    const [d] = run([reading(1_000, 0, 1, 0)], { ...limits, maxStep: 100 }, ds[0]!.state);
    assert.ok(Math.abs((d?.state.arrivalPerSec ?? 0) - 21) < 1e-9, String(d?.state.arrivalPerSec));
  });

  it('NaN and negative rates read as 0', () => {
    const [d] = run([reading(0, Number.NaN, -3, 0)], { ...limits, min: 2 });
    assert.equal(d?.desired, 2);
    assert.equal(d?.state.arrivalPerSec, 0);
  });
});
