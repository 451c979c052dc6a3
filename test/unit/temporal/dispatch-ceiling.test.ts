// The dispatch ceiling (src/temporal/dispatch-ceiling.ts): rates in, hold or not out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  flat,
  initialCeilingState,
  observeCeiling,
  recordScaleUp,
  RESUME_READINGS,
  type CeilingReading,
  type CeilingState,
} from '../../../src/temporal/dispatch-ceiling.ts';

const options = { bandFraction: 0.2, settleMs: 6_000 };
const at = (now: number, dispatchRatePerSec: number, backlog: number, liveWorkers: number): CeilingReading => ({
  now,
  dispatchRatePerSec,
  backlog,
  liveWorkers,
});

/** Scales up at `before`, then reads `after`. */
function judge(before: CeilingReading, after: CeilingReading, state: CeilingState = initialCeilingState) {
  const seen = observeCeiling(state, before, options);
  return observeCeiling(recordScaleUp(seen.state, before), after, options);
}

describe('dispatch ceiling', () => {
  it('flat: within 20 % of the larger rate, and never narrower than 0.1 task/s', () => {
    assert.equal(flat(5, 4.2, 0.2), true);
    assert.equal(flat(5, 3.9, 0.2), false);
    assert.equal(flat(0, 0.02, 0.2), true);
    assert.equal(flat(0, 0.03, 0.2), false);
  });

  it('more workers, the same rate, a growing backlog: held, with the scale-up that did not help as evidence', () => {
    const v = judge(at(0, 5, 40, 2), at(6_000, 5.3, 52, 4));
    assert.equal(v.hold, true);
    assert.equal(v.change, 'held');
    assert.deepEqual(v.evidence, { rateBefore: 5, workersBefore: 2, backlogBefore: 40 });
    assert.deepEqual(v.state.ceiling, { ratePerSec: 5.3, since: 6_000, workers: 4, outside: 0 });
  });

  it('not judged before the scale-up settled', () => {
    const v = judge(at(0, 5, 40, 2), at(5_999, 5, 52, 4));
    assert.equal(v.hold, false);
    assert.equal(v.change, undefined);
    assert.notEqual(v.state.pending, undefined, 'still waiting to judge');
  });

  it('the rate rose with the workers: no ceiling, and the scale-up is judged once', () => {
    const v = judge(at(0, 5, 40, 2), at(6_000, 9, 52, 4));
    assert.equal(v.hold, false);
    assert.deepEqual(v.state, initialCeilingState);
  });

  it('a backlog that did not grow (the workers keep up): no ceiling', () => {
    assert.equal(judge(at(0, 5, 40, 2), at(6_000, 5, 40, 4)).hold, false);
    assert.equal(judge(at(0, 5, 40, 2), at(6_000, 5, 10, 4)).hold, false);
  });

  it('a scale-up from no worker or from a rate of 0 proves nothing (a missing worker, not a ceiling)', () => {
    assert.equal(judge(at(0, 5, 40, 0), at(6_000, 5, 52, 2)).hold, false);
    assert.equal(judge(at(0, 0, 40, 2), at(6_000, 0, 52, 4)).hold, false);
  });

  it('workers lost meanwhile (fewer alive than before): not judged a ceiling', () => {
    assert.equal(judge(at(0, 5, 40, 2), at(6_000, 5, 52, 2)).hold, false);
  });

  it('held while the rate stays in the band, whatever the backlog; resumed once when it has moved for 3 readings, up or down', () => {
    const held = judge(at(0, 5, 40, 2), at(6_000, 5, 52, 4)).state;
    for (const [rate, backlog] of [
      [5.9, 80],
      [4.1, 200],
    ] as const) {
      const v = observeCeiling(held, at(20_000, rate, backlog, 4), options);
      assert.equal(v.hold, true, `rate ${rate}`);
      assert.equal(v.change, undefined);
    }
    for (const rate of [6.5, 3.5]) {
      // Outside the band for three readings in a row: held for the first two, resumed at the third.
      let state = held;
      for (let i = 1; i < RESUME_READINGS; i++) {
        const v = observeCeiling(state, at(20_000 + i, rate, 200, 4), options);
        assert.equal(v.hold, true, `rate ${rate}, reading ${i}`);
        state = v.state;
      }
      const v = observeCeiling(state, at(30_000, rate, 200, 4), options);
      assert.equal(v.hold, false, `rate ${rate}`);
      assert.equal(v.change, 'resumed');
      assert.deepEqual(v.state, initialCeilingState);
    }
    // One reading off the ceiling, then back in the band: the count starts again.
    const off = observeCeiling(held, at(20_000, 7, 200, 4), options).state;
    const back = observeCeiling(off, at(21_000, 5, 200, 4), options).state;
    assert.equal(back.ceiling?.outside, 0);
  });

  it('a second scale-up before the first is judged keeps the first one as the comparison', () => {
    const first = recordScaleUp(initialCeilingState, at(0, 5, 40, 2));
    const second = recordScaleUp(first, at(3_000, 5, 46, 3));
    assert.deepEqual(second, first);
    assert.equal(observeCeiling(second, at(6_000, 5, 52, 4), options).change, 'held');
  });

  it('NaN or negative rates read as 0', () => {
    const v = judge(at(0, Number.NaN, 40, 2), at(6_000, -1, 52, 4));
    assert.equal(v.hold, false, 'a rate of 0 before is never judged');
  });
});
