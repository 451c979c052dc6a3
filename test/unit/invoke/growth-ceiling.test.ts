// The growth cap as a ceiling: the pure GrowthCap read on a clock, following the invocations in flight.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GrowthCeiling } from '../../../src/invoke/growth-ceiling.ts';

describe('GrowthCeiling', () => {
  it('starts at the floor, follows the invocations in flight, and rises as its window moves on', () => {
    let now = 0;
    const ceiling = new GrowthCeiling({ factor: 2, windowMs: 10_000 }, 2, () => now);
    assert.equal(ceiling.limit(), 2, 'the window before the start counts as idle');
    ceiling.inFlight(2);
    assert.equal(ceiling.msToNextChange(), 1_000, 'the next sub-window');
    now = 5_000;
    assert.equal(ceiling.limit(), 2, 'two in flight for half a window: not yet a level');
    assert.equal(ceiling.msToNextChange(), 1_000);
    now = 12_000;
    assert.equal(ceiling.limit(), 4, 'two in flight for a whole window: twice that');
  });

  it('refuses a factor that does not grow', () => {
    assert.throws(() => new GrowthCeiling({ factor: 1, windowMs: 1_000 }, 1, () => 0), RangeError);
  });
});
