import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { batchWindowProblems } from '../../../src/config/batch-window-rules.ts';

describe("batch window: the trigger's configuration rules", () => {
  it('accepts the defaults, batches up to 10 without a window, and larger ones with a window of 1 s or more', () => {
    assert.deepEqual(batchWindowProblems(1, 0, ['a']), []);
    assert.deepEqual(batchWindowProblems(10, 0, ['a', 'b']), []);
    assert.deepEqual(batchWindowProblems(10, 300_000, ['a']), []);
    assert.deepEqual(batchWindowProblems(11, 1_000, ['a']), []);
    assert.deepEqual(batchWindowProblems(10_000, 300_000, ['a']), []);
    assert.deepEqual(batchWindowProblems(10, 0, ['f.fifo']), []);
  });

  it('a batch size above 10 needs a window of at least 1 s', () => {
    assert.deepEqual(batchWindowProblems(11, 0, ['a']), [
      "--batch-size above 10 needs a --batch-window of at least 1s (as on Lambda's trigger), got --batch-size 11 with --batch-window 0s",
    ]);
    assert.deepEqual(batchWindowProblems(500, 999, ['a']), [
      "--batch-size above 10 needs a --batch-window of at least 1s (as on Lambda's trigger), got --batch-size 500 with --batch-window 999ms",
    ]);
  });

  it('FIFO: at most 10 and no window, naming the queues (names or URLs)', () => {
    assert.deepEqual(batchWindowProblems(11, 2_000, ['a', 'orders.fifo']), [
      "--batch-size must be at most 10 with FIFO queue orders.fifo (as on Lambda's trigger), got 11",
      "--batch-window is not available with FIFO queue orders.fifo (Lambda's trigger has no window on FIFO), got 2s",
    ]);
    assert.deepEqual(batchWindowProblems(5, 1_500, ['https://sqs.us-east-1.amazonaws.com/123456789012/x.fifo', 'y.fifo']), [
      "--batch-window is not available with FIFO queues x.fifo, y.fifo (Lambda's trigger has no window on FIFO), got 1500ms",
    ]);
  });

  it('says where a value came from when it was not a flag', () => {
    const origins = { batchSize: 'WORKERLESS_BATCH_SIZE', batchWindow: 'batch-window in wl.yaml' };
    assert.deepEqual(batchWindowProblems(50, 500, ['a'], origins), [
      "--batch-size above 10 needs a --batch-window of at least 1s (as on Lambda's trigger), got --batch-size 50 (from WORKERLESS_BATCH_SIZE) with --batch-window 500ms (from batch-window in wl.yaml)",
    ]);
    assert.deepEqual(batchWindowProblems(50, 0, ['a.fifo'], { batchSize: '--batch-size' }), [
      "--batch-size must be at most 10 with FIFO queue a.fifo (as on Lambda's trigger), got 50",
    ]);
  });
});
