// The daemon's shutdown policies: the drain-retry budget inside --shutdown-timeout, and the force-exit timer.
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { drainRetryMs, forceExitAfter } from '../../../src/daemon/shutdown.ts';

describe('the drain-retry budget', () => {
  it('leaves the last 15 s of --shutdown-timeout to the invocations in flight', () => {
    // The default --shutdown-timeout 30: 15 s of retries, 15 s for what is in flight.
    assert.equal(drainRetryMs(30_000), 15_000);
    assert.equal(drainRetryMs(60_000), 45_000);
  });

  it('is 0 (release at once) when the timeout is 15 s or less, never negative', () => {
    assert.equal(drainRetryMs(15_000), 0);
    assert.equal(drainRetryMs(1_000), 0);
  });
});

describe('the force-exit timer', () => {
  it('forces the exit once --shutdown-timeout has passed, not before', (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const forceExit = mock.fn();
    forceExitAfter(30_000, forceExit);
    t.mock.timers.tick(29_999);
    assert.equal(forceExit.mock.callCount(), 0);
    t.mock.timers.tick(1);
    assert.equal(forceExit.mock.callCount(), 1);
  });

  it('does not keep the process alive: a drain that ends in time exits without waiting for it', () => {
    // Node's own timers: the handle must be unref'd (mocked timers have no refs to check).
    const timers: NodeJS.Timeout[] = [];
    const real = globalThis.setTimeout;
    const spy = mock.method(globalThis, 'setTimeout', (fn: () => void, ms: number) => {
      const handle = real(fn, ms);
      timers.push(handle);
      return handle;
    });
    try {
      forceExitAfter(60_000, () => assert.fail('forced exit'));
    } finally {
      spy.mock.restore();
    }
    assert.equal(timers.length, 1);
    assert.equal(timers[0]?.hasRef(), false);
    clearTimeout(timers[0]);
  });
});
