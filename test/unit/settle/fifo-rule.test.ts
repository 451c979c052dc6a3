import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { idsToKeep, stopsAfterChunk } from '../../../src/settle/fifo-rule.ts';

const batch = ['m1', 'm2', 'm3', 'm4', 'm5'];

describe('idsToKeep (the FIFO rule)', () => {
  describe('standard queue', () => {
    it('keeps exactly the failed messages, in receive order', () => {
      assert.deepEqual(idsToKeep(batch, new Set(['m4', 'm2']), false), ['m2', 'm4']);
    });

    it('keeps nothing when nothing failed, and everything when everything failed', () => {
      assert.deepEqual(idsToKeep(batch, new Set(), false), []);
      assert.deepEqual(idsToKeep(batch, new Set(batch), false), batch);
    });

    it('ignores failed ids that are not in the batch', () => {
      assert.deepEqual(idsToKeep(batch, new Set(['other', 'm3']), false), ['m3']);
    });
  });

  describe('FIFO queue', () => {
    it('keeps the first failed message and every later one, failed or not', () => {
      assert.deepEqual(idsToKeep(batch, new Set(['m3']), true), ['m3', 'm4', 'm5']);
    });

    it('stops at the first failure in receive order, not in the order of the failed set', () => {
      // The set lists m4 first; m2 comes first in the batch, so m2..m5 stay.
      assert.deepEqual(idsToKeep(batch, new Set(['m4', 'm2']), true), ['m2', 'm3', 'm4', 'm5']);
    });

    it('keeps the whole batch when the first message failed, and only the last when only it failed', () => {
      assert.deepEqual(idsToKeep(batch, new Set(['m1']), true), batch);
      assert.deepEqual(idsToKeep(batch, new Set(['m5']), true), ['m5']);
    });

    it('keeps nothing when nothing in the batch failed', () => {
      assert.deepEqual(idsToKeep(batch, new Set(), true), []);
      assert.deepEqual(idsToKeep(batch, new Set(['not-in-batch']), true), []);
    });

    it('returns a new array, leaving the batch untouched', () => {
      const ordered = [...batch];
      const kept = idsToKeep(ordered, new Set(['m1']), true);
      assert.notEqual(kept, ordered);
      kept.pop();
      assert.deepEqual(ordered, batch);
    });
  });

  it('an empty batch keeps nothing on either kind of queue', () => {
    assert.deepEqual(idsToKeep([], new Set(['m1']), false), []);
    assert.deepEqual(idsToKeep([], new Set(['m1']), true), []);
  });

  it('the two rules differ exactly when a success follows a failure', () => {
    const failed = new Set(['m2']);
    assert.deepEqual(idsToKeep(batch, failed, false), ['m2']);
    assert.deepEqual(idsToKeep(batch, failed, true), ['m2', 'm3', 'm4', 'm5']);
  });
});

describe('stopsAfterChunk (the FIFO stop between chunks of a batch over the payload limit)', () => {
  it('FIFO: stops once a message of the batch is kept and chunks remain', () => {
    // Two chunks of the batch were invoked (m1..m3), m2 failed: m4 and m5 must not run before it.
    assert.equal(stopsAfterChunk(batch, new Set(['m2']), true, 3, 5), true);
  });

  it('FIFO: carries on while nothing is kept, and has nothing to stop after the last chunk', () => {
    assert.equal(stopsAfterChunk(batch, new Set(), true, 3, 5), false);
    assert.equal(stopsAfterChunk(batch, new Set(['m5']), true, 5, 5), false);
  });

  it('FIFO: a kept id that is not in the batch does not stop it', () => {
    assert.equal(stopsAfterChunk(batch, new Set(['other']), true, 3, 5), false);
  });

  it('standard queue: never stops; failed messages are kept and the other chunks still run', () => {
    assert.equal(stopsAfterChunk(batch, new Set(['m1', 'm2']), false, 2, 5), false);
  });
});
