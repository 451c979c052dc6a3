// The fixed ceiling: --concurrency, the one ceiling every concurrency budget has.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FixedCeiling } from '../../../src/invoke/ceiling.ts';

describe('FixedCeiling', () => {
  it('allows --concurrency invocations at once, and hears nothing that could move it', () => {
    const ceiling = new FixedCeiling(10);
    assert.equal(ceiling.limit(), 10);
    // No events: the gate neither tells it Lambda's answers nor the invocations in flight, nor wakes for it.
    assert.equal('heard' in ceiling, false);
    assert.equal('inFlight' in ceiling, false);
    assert.equal('msToNextChange' in ceiling, false);
  });

  it('refuses a limit that is not a whole number of loops', () => {
    assert.throws(() => new FixedCeiling(0), /integer of at least 1, got 0/);
    assert.throws(() => new FixedCeiling(2.5), RangeError);
  });
});
