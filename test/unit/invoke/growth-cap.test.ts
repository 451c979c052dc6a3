// The growth cap of adaptive concurrency: AWS Lambda Developer Guide, "Scaling Lambda Managed Instances" ("If your
// traffic more than doubles within 5 minutes, you may see throttles").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GrowthCap } from '../../../src/invoke/growth-cap.ts';

const WINDOW = 300_000;
const SUB = WINDOW / 10;

/** Runs `inFlight` invocations at the cap from t=0 for `ms`, raising to the cap at every step; returns the caps seen. */
function rampAtCap(cap: GrowthCap, ms: number, stepMs = 1_000): number[] {
  const seen: number[] = [];
  for (let t = 0; t <= ms; t += stepMs) {
    const c = cap.cap(t);
    cap.observe(t, c);
    if (seen.at(-1) !== c) seen.push(c);
  }
  return seen;
}

describe('GrowthCap', () => {
  it('starts from the floor and at most doubles per window while every allowed invocation runs', () => {
    const cap = new GrowthCap({ factor: 2, windowMs: WINDOW }, 8, 0);
    assert.equal(cap.cap(0), 8, 'idle before the start: the floor');
    // A window and a sub-window at 8 before 16: the window is judged on the safe side.
    assert.deepEqual(rampAtCap(cap, 4 * WINDOW + 4 * SUB), [8, 16, 32, 64, 128]);
  });

  it('never allows more than the factor times the lowest level of any window (checked at every second of a ramp)', () => {
    const cap = new GrowthCap({ factor: 2, windowMs: WINDOW }, 4, 0);
    const levels: [number, number][] = [];
    for (let t = 0; t <= 6 * WINDOW; t += 1_000) {
      const c = cap.cap(t);
      cap.observe(t, c);
      levels.push([t, c]);
    }
    for (const [t, level] of levels) {
      const earlier = levels.filter(([s]) => s >= t - WINDOW && s <= t).map(([, l]) => l);
      assert.ok(level <= Math.max(4, 2 * Math.min(...earlier)), `at ${t} ms: ${level} over 2 x ${Math.min(...earlier)}`);
    }
  });

  it('reads a level by its sub-window peak: a gap between one invocation and the next is not traffic that fell', () => {
    const cap = new GrowthCap({ factor: 2, windowMs: WINDOW }, 10, 0);
    for (let t = 0; t <= WINDOW + SUB; t += 100) {
      cap.observe(t, 10);
      cap.observe(t + 1, 9); // one ends; the next starts 1 ms later
    }
    assert.equal(cap.cap(WINDOW + SUB + 50), 20);
  });

  it('counts a level only once it has lasted a whole window, also when it was reached at the end of a sub-window', () => {
    const cap = new GrowthCap({ factor: 2, windowMs: WINDOW }, 2, 0);
    cap.observe(SUB - 1, 2);
    for (let t = SUB; t < SUB - 1 + WINDOW; t += 1_000) assert.equal(cap.cap(t), 2, `at ${t} ms`);
    assert.equal(cap.cap(WINDOW + 2 * SUB), 4);
  });

  it('falls with the traffic, and holds the level of a quiet stretch with no events', () => {
    const cap = new GrowthCap({ factor: 2, windowMs: WINDOW }, 2, 0);
    cap.observe(0, 2);
    assert.equal(cap.cap(WINDOW + SUB), 4, 'two in flight throughout, without a new event');
    cap.observe(WINDOW + SUB, 0);
    assert.equal(cap.cap(WINDOW + 2 * SUB), 2, 'idle: back to the floor');
  });

  it('grows by at least one when the factor times a small level rounds down to it', () => {
    const cap = new GrowthCap({ factor: 1.5, windowMs: WINDOW }, 1, 0);
    assert.deepEqual(rampAtCap(cap, 3 * WINDOW + 3 * SUB), [1, 2, 3, 4]);
  });

  it('tells when it can next change: at the start of the next sub-window', () => {
    const cap = new GrowthCap({ factor: 2, windowMs: 10_000 }, 1, 0);
    assert.equal(cap.msToNextChange(2_500), 500);
    assert.equal(cap.msToNextChange(3_000), 1_000);
  });

  it('refuses a factor of 1 or less', () => {
    assert.throws(() => new GrowthCap({ factor: 1, windowMs: WINDOW }, 1, 0), RangeError);
  });
});
