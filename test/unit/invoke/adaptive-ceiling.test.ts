// The adaptive limit as a ceiling: what the gate hears of each Invoke, passed on to the pure ConcurrencyLimit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdaptiveCeiling } from '../../../src/invoke/adaptive-ceiling.ts';

describe('AdaptiveCeiling', () => {
  it('starts at --concurrency and refuses bounds that cannot hold', () => {
    assert.equal(new AdaptiveCeiling({ max: 30, min: 1 }, 0).limit(), 30);
    assert.throws(() => new AdaptiveCeiling({ max: 5, min: 6 }, 0), /1 <= min <= max/);
  });

  it('a throttle lowers it (true: it moved), at most once per decrease window', () => {
    const ceiling = new AdaptiveCeiling({ max: 30, min: 1 }, 0);
    assert.equal(ceiling.heard('throttled', 10, 30, 5), true);
    assert.equal(ceiling.limit(), 15, 'nothing got through since the start: halved');
    assert.equal(ceiling.heard('throttled', 20, 15, 5), false, 'within the window');
    assert.equal(ceiling.limit(), 15);
  });

  it('accepted invocations raise it by one a window, only while every allowed loop is in use', () => {
    const ceiling = new AdaptiveCeiling({ max: 4, min: 1 }, 0);
    ceiling.heard('throttled', 0, 4, 10);
    assert.equal(ceiling.limit(), 2);
    assert.equal(ceiling.heard('accepted', 500, 2, 10), false, 'every loop in use, but within the window since the change');
    const other = new AdaptiveCeiling({ max: 4, min: 1 }, 0);
    other.heard('throttled', 0, 4, 10);
    assert.equal(other.heard('accepted', 2_000, 1, 10), false, 'a window later, but loops sit idle: no rise');
    assert.equal(ceiling.heard('accepted', 1_000, 2, 10), true, 'a whole window with every loop in use: one more');
    assert.equal(ceiling.limit(), 3);
    assert.equal(other.limit(), 2);
  });
});
