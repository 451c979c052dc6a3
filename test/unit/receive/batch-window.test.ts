import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { firstReceiveMax, gathers, decideGather, type BatchWindow, type Gathered } from '../../../src/receive/batch-window.ts';

const T0 = 1_000_000;
const MB6 = 6 * 1024 * 1024;
const window = (over: Partial<BatchWindow> = {}): BatchWindow => ({
  batchSize: 100,
  windowMs: 10_000,
  maxBytes: MB6,
  maxWaitSec: 20,
  ...over,
});
const gathered = (over: Partial<Gathered> = {}): Gathered => ({
  count: 10,
  bytes: 10_000,
  largestRecordBytes: 1_000,
  startedAt: T0,
  lastReceiveEmpty: false,
  readSinceFirst: true,
  ...over,
});

describe('batch window: when to invoke', () => {
  it('invokes a full batch at once, whatever the window left', () => {
    assert.deepEqual(decideGather(gathered({ count: 100 }), window(), T0 + 1), { action: 'invoke', reason: 'full' });
    assert.deepEqual(decideGather(gathered({ count: 10 }), window({ batchSize: 10 }), T0), { action: 'invoke', reason: 'full' });
  });

  it('invokes when the window from the first receive is over', () => {
    assert.deepEqual(decideGather(gathered(), window(), T0 + 10_000), { action: 'invoke', reason: 'window' });
    assert.deepEqual(decideGather(gathered(), window(), T0 + 12_345), { action: 'invoke', reason: 'window' });
    assert.equal(decideGather(gathered(), window(), T0 + 9_999).action, 'receive');
  });

  it('a window that ran out before the queue was read again (the batch waited for a loop) is read once, then invoked', () => {
    const waited = gathered({ readSinceFirst: false });
    assert.deepEqual(decideGather(waited, window(), T0 + 12_345), { action: 'receive', max: 10, waitSec: 0, delayMs: 0 });
    assert.deepEqual(decideGather(gathered({ lastReceiveEmpty: true }), window(), T0 + 12_345), { action: 'invoke', reason: 'window' });
    // Full and payload still come first.
    assert.deepEqual(decideGather(gathered({ readSinceFirst: false, count: 100 }), window(), T0 + 12_345), {
      action: 'invoke',
      reason: 'full',
    });
  });

  it('invokes when the next message, as large as the largest so far, would pass the payload limit', () => {
    const big = 250 * 1024;
    // 24 records of 250 KiB fill 6 MiB but for a few bytes: a 25th does not fit.
    const full = gathered({ count: 24, bytes: 15 + 24 * big, largestRecordBytes: big });
    assert.deepEqual(decideGather(full, window(), T0 + 1), { action: 'invoke', reason: 'payload' });
    const oneMore = gathered({ count: 23, bytes: 15 + 23 * big, largestRecordBytes: big });
    assert.deepEqual(decideGather(oneMore, window(), T0 + 1), { action: 'receive', max: 1, waitSec: 9, delayMs: 0 });
  });

  it('a batch already past the limit (larger messages than before) is invoked, and split by the payload builder', () => {
    assert.deepEqual(decideGather(gathered({ bytes: MB6 + 5, largestRecordBytes: 1_000_000 }), window(), T0), {
      action: 'invoke',
      reason: 'payload',
    });
  });

  it('full comes before payload, payload before window', () => {
    const all = gathered({ count: 100, bytes: MB6, largestRecordBytes: 1_000 });
    assert.deepEqual(decideGather(all, window(), T0 + 20_000), { action: 'invoke', reason: 'full' });
    assert.deepEqual(decideGather({ ...all, count: 50 }, window(), T0 + 20_000), { action: 'invoke', reason: 'payload' });
  });
});

describe('batch window: what to receive next', () => {
  it('asks for at most 10 (the ReceiveMessage maximum), fewer when the batch is nearly full', () => {
    assert.deepEqual(decideGather(gathered({ count: 10 }), window(), T0), { action: 'receive', max: 10, waitSec: 10, delayMs: 0 });
    assert.deepEqual(decideGather(gathered({ count: 97 }), window(), T0), { action: 'receive', max: 3, waitSec: 10, delayMs: 0 });
  });

  it('asks for no more than fit under the payload limit at the largest record size so far', () => {
    const step = decideGather(gathered({ bytes: MB6 - 3 * 200_000 - 10, largestRecordBytes: 200_000 }), window(), T0);
    assert.deepEqual(step, { action: 'receive', max: 3, waitSec: 10, delayMs: 0 });
  });

  it('long-polls the whole seconds left of the window, at most 20', () => {
    const long = window({ windowMs: 300_000 });
    assert.equal((decideGather(gathered(), long, T0) as { waitSec: number }).waitSec, 20);
    assert.equal((decideGather(gathered(), long, T0 + 285_000) as { waitSec: number }).waitSec, 15);
    assert.equal((decideGather(gathered(), window({ windowMs: 2_000 }), T0 + 700) as { waitSec: number }).waitSec, 1);
    assert.equal((decideGather(gathered(), window({ windowMs: 2_000 }), T0 + 1_000) as { waitSec: number }).waitSec, 1);
    // --poll-for caps it, so a stop waits no longer for a receive in flight than without a window.
    assert.equal((decideGather(gathered(), window({ maxWaitSec: 1 }), T0) as { waitSec: number }).waitSec, 1);
  });

  it('in the last partial second, short receives follow each other while they return messages', () => {
    assert.deepEqual(decideGather(gathered(), window({ windowMs: 1_000 }), T0 + 5), {
      action: 'receive',
      max: 10,
      waitSec: 0,
      delayMs: 0,
    });
    assert.deepEqual(decideGather(gathered(), window({ windowMs: 2_000 }), T0 + 1_300), {
      action: 'receive',
      max: 10,
      waitSec: 0,
      delayMs: 0,
    });
  });

  it('once the queue looks empty, waits out the last partial second, then reads it with a short receive', () => {
    const empty = gathered({ lastReceiveEmpty: true });
    assert.deepEqual(decideGather(empty, window({ windowMs: 2_000 }), T0 + 1_300), {
      action: 'receive',
      max: 10,
      waitSec: 0,
      delayMs: 700,
    });
    assert.deepEqual(decideGather(empty, window({ windowMs: 500 }), T0), { action: 'receive', max: 10, waitSec: 0, delayMs: 500 });
    // Whole seconds left: a long poll, empty or not.
    assert.deepEqual(decideGather(empty, window({ windowMs: 2_000 }), T0), { action: 'receive', max: 10, waitSec: 2, delayMs: 0 });
  });

  it('before any record is known, asks for a full receive', () => {
    assert.deepEqual(decideGather(gathered({ count: 0, bytes: 15, largestRecordBytes: 0 }), window(), T0), {
      action: 'receive',
      max: 10,
      waitSec: 10,
      delayMs: 0,
    });
  });

  it('the first receive of a batch asks for the batch size, at most 10', () => {
    assert.equal(firstReceiveMax(1), 1);
    assert.equal(firstReceiveMax(7), 7);
    assert.equal(firstReceiveMax(10), 10);
    assert.equal(firstReceiveMax(10_000), 10);
  });

  it('gathers only with a window and never on FIFO', () => {
    assert.equal(gathers({ windowMs: 0 }, false), false);
    assert.equal(gathers({ windowMs: 1 }, false), true);
    assert.equal(gathers({ windowMs: 5_000 }, true), false);
  });
});
